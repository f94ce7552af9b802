package app

import (
	"fmt"
	"log/slog"
	"net"
	"net/http"

	"github.com/prometheus/exporter-toolkit/web"

	"github.com/amp-exporter/amp-exporter/config"
	"github.com/amp-exporter/amp-exporter/source/amy"
)

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

// amyProxies builds the servers of the reverse-proxy taps configured at
// start, each served under names and its own listen address's host (the
// amy source's taps follow reloads of their upstream; the listeners are
// fixed for the life of the process, and a reload that changes them is
// reported as needing a restart).
func amyProxies(cfg *config.Config, taps *amy.Source, names hostNames) ([]amyProxy, error) {
	var out []amyProxy
	for _, u := range cfg.Amy {
		if u.Proxy.ListenAddress == "" {
			continue
		}
		h := taps.Proxy(u.Name)
		if h == nil {
			return nil, fmt.Errorf("amy %q: no tap for its proxy (apply the configuration to the amy source first)", u.Name)
		}
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
		// Clients reach a proxy by its listen address, a loopback name or
		// the exporter's names: a web page rebinding another name to it
		// would have the upstream answer that page.
		srv := &http.Server{Addr: u.Proxy.ListenAddress, Handler: refuseOtherHosts(names.with([]string{u.Proxy.ListenAddress}), h)}
		hardenProxyServer(srv)
		out = append(out, amyProxy{
			upstream: u.Name, target: amy.UpstreamOf(u).BaseURL.Redacted(), server: srv, webConfig: u.Proxy.WebConfigFile,
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
