package main

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"time"

	"github.com/prometheus/exporter-toolkit/web"

	"github.com/amp-exporter/amp-exporter/config"
	amysource "github.com/amp-exporter/amp-exporter/source/amy"
	"github.com/amp-exporter/amp-exporter/store"
)

func upstreamNames(cfg *config.Config) []string {
	names := make([]string, 0, len(cfg.Amy))
	for _, u := range cfg.Amy {
		names = append(names, u.Name)
	}
	return names
}

// longestTurnTimeout is how long a follower may wait for a turn to end: the
// store keeps an unfinished turn's state at least that long.
func longestTurnTimeout(cfg *config.Config) time.Duration {
	var d time.Duration
	for _, u := range cfg.Amy {
		d = max(d, time.Duration(u.TurnTimeout))
	}
	return d
}

func amyUpstream(u config.AmyUpstream) amysource.Upstream {
	base, _ := url.Parse(u.BaseURL) // validated by config
	return amysource.Upstream{
		Name: u.Name, BaseURL: base, APIKey: string(u.APIKey), APIKeyFile: u.APIKeyFile,
		IdleTimeout: time.Duration(u.IdleTimeout), TurnTimeout: time.Duration(u.TurnTimeout),
	}
}

// followConfiguredTurns starts a follower for every configured turn (at
// start and after a reload; turns already followed or over are skipped).
func followConfiguredTurns(ctx context.Context, cfg *config.Config, client *amysource.Client) {
	for _, u := range cfg.Amy {
		up := amyUpstream(u)
		for _, t := range u.Turns {
			client.Follow(ctx, up, t, "")
		}
	}
}

// pruneAmy drops finished turns past the replay window, hourly, and waits
// for the followers at shutdown.
func pruneAmy(ctx context.Context, store *store.AmyStore, client *amysource.Client) error {
	t := time.NewTicker(time.Hour)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			client.Wait()
			return nil
		case <-t.C:
			store.Prune()
		}
	}
}

type amyProxy struct {
	upstream, target string
	server           *http.Server
	webConfig        string // exporter-toolkit web config: TLS, client certificates
}

// serve runs the proxy's listener, with TLS and client certificates when
// its web config says so, the main server's connection limit, and a warning
// when bearer tokens would cross the network in clear text.
func (p amyProxy) serve(maxConns int, log *slog.Logger) error {
	addrs := []string{p.server.Addr}
	cfgFile := p.webConfig
	systemd := false
	auth, err := readWebAuth(cfgFile)
	if err != nil {
		return err
	}
	if !auth.tls() && !loopbackAddress(p.server.Addr) {
		log.Warn("Amy proxy listens in plain HTTP on a non-loopback address: clients' bearer tokens cross the network in clear text; set proxy.web_config_file (TLS)",
			"upstream", p.upstream, "address", p.server.Addr)
	}
	return listenAndServe(p.server, &web.FlagConfig{WebListenAddresses: &addrs, WebSystemdSocket: &systemd, WebConfigFile: &cfgFile}, maxConns, log)
}

// loopbackAddress reports whether a listen address binds loopback only.
func loopbackAddress(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// amyProxies builds the reverse-proxy taps configured at start. Their
// addresses are fixed for the life of the process; a reload that changes
// them is reported and needs a restart.
func amyProxies(ctx context.Context, cfg *config.Config, store *store.AmyStore, client *amysource.Client, log *slog.Logger) ([]amyProxy, error) {
	var out []amyProxy
	for _, u := range cfg.Amy {
		if u.Proxy.ListenAddress == "" {
			continue
		}
		up := amyUpstream(u)
		h := amysource.NewProxy(ctx, up, store, client, log, nil)
		if u.Proxy.WebConfigFile != "" {
			auth, err := readWebAuth(u.Proxy.WebConfigFile)
			if err != nil {
				return nil, fmt.Errorf("amy %q proxy.web_config_file: %w", u.Name, err)
			}
			if len(auth.BasicAuthUsers) > 0 {
				return nil, fmt.Errorf("amy %q proxy.web_config_file: %w", u.Name, errProxyBasicAuth)
			}
			if err := web.Validate(u.Proxy.WebConfigFile); err != nil {
				return nil, fmt.Errorf("amy %q proxy.web_config_file: %w", u.Name, err)
			}
		}
		srv := &http.Server{Addr: u.Proxy.ListenAddress, Handler: h}
		hardenProxyServer(srv)
		out = append(out, amyProxy{
			upstream: u.Name, target: up.BaseURL.Redacted(), server: srv, webConfig: u.Proxy.WebConfigFile,
		})
	}
	seen := map[string]bool{}
	for _, p := range out {
		if seen[p.server.Addr] {
			return nil, fmt.Errorf("amy proxy listen_address %q used twice", p.server.Addr)
		}
		seen[p.server.Addr] = true
	}
	return out, nil
}
