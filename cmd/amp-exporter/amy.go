package main

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"time"

	"github.com/amp-exporter/amp-exporter/collector"
	"github.com/amp-exporter/amp-exporter/config"
	amysource "github.com/amp-exporter/amp-exporter/source/amy"
)

func upstreamNames(cfg *config.Config) []string {
	names := make([]string, 0, len(cfg.Amy))
	for _, u := range cfg.Amy {
		names = append(names, u.Name)
	}
	return names
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
func pruneAmy(ctx context.Context, store *collector.AmyStore, client *amysource.Client) error {
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
}

// amyProxies builds the reverse-proxy taps configured at start. Their
// addresses are fixed for the life of the process; a reload that changes
// them is reported and needs a restart.
func amyProxies(ctx context.Context, cfg *config.Config, store *collector.AmyStore, client *amysource.Client, log *slog.Logger) ([]amyProxy, error) {
	var out []amyProxy
	for _, u := range cfg.Amy {
		if u.Proxy.ListenAddress == "" {
			continue
		}
		up := amyUpstream(u)
		h := amysource.NewProxy(ctx, up, store, client, log, nil)
		out = append(out, amyProxy{
			upstream: u.Name, target: up.BaseURL.Redacted(),
			server: &http.Server{Addr: u.Proxy.ListenAddress, Handler: h, ReadHeaderTimeout: 30 * time.Second},
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
