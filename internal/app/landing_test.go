package app

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/amp-exporter/amp-exporter/config"
	"github.com/amp-exporter/amp-exporter/internal/app/landing"
)

// metricsOf builds a landing.Metrics snapshot from gauges set to the given
// values: "name{label=value,…}" → value.
func metricsOf(t *testing.T, series map[string]float64) landing.Metrics {
	t.Helper()
	reg := prometheus.NewRegistry()
	vecs := map[string]*prometheus.GaugeVec{}
	for s, v := range series {
		name, rest, _ := strings.Cut(strings.TrimSuffix(s, "}"), "{")
		var names, values []string
		if rest != "" {
			for _, kv := range strings.Split(rest, ",") {
				k, val, _ := strings.Cut(kv, "=")
				names, values = append(names, k), append(values, val)
			}
		}
		vec, ok := vecs[name]
		if !ok {
			vec = prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: name, Help: name}, names)
			reg.MustRegister(vec)
			vecs[name] = vec
		}
		vec.WithLabelValues(values...).Set(v)
	}
	return landing.Gather(reg)
}

func TestLandingProviders(t *testing.T) {
	dir := t.TempDir()
	gone := filepath.Join(dir, "gone")
	cfgWith := func(mod func(*config.Config)) func() *config.Config {
		c := config.Default()
		c.Threads.Dirs = []string{dir}
		c.Streams.Ingest.Enabled = false
		mod(c)
		return func() *config.Config { return c }
	}
	none := func(*config.Config) {}
	ready := func() bool { return true }
	tests := []struct {
		name       string
		provider   landing.Provider
		metrics    map[string]float64
		state      string
		attention  bool
		configured string
	}{
		{"threads watching", threadsProvider(cfgWith(none), ready, nil, nil, ready), nil, "watching", false, dir},
		{"threads polling", threadsProvider(cfgWith(none), ready, nil, nil, ready), map[string]float64{"amp_exporter_watcher_polling": 1}, "polling", false, dir},
		{"threads first scan", threadsProvider(cfgWith(none), func() bool { return false }, nil, nil, func() bool { return false }), nil, "first scan running", false, dir},
		{"threads all missing", threadsProvider(cfgWith(func(c *config.Config) { c.Threads.Dirs = []string{gone} }), ready, nil, nil, ready), nil, "missing", true, gone + " (missing)"},
		{"threads one missing", threadsProvider(cfgWith(func(c *config.Config) { c.Threads.Dirs = []string{dir, gone} }), ready, nil, nil, ready), nil, "watching, 1 of 2 missing", true, gone + " (missing)"},
		{"streams off", streamsProvider(cfgWith(none), ready), nil, landing.NotConfigured, false, ""},
		{"streams ingest only", streamsProvider(cfgWith(func(c *config.Config) { c.Streams.Ingest.Enabled = true }), ready), nil, "waiting for ingest", false, IngestPath},
		{"streams dir missing", streamsProvider(cfgWith(func(c *config.Config) { c.Streams.Dirs = []string{gone} }), ready), nil, "1 of 1 directories missing", true, gone},
		{"server slot empty", serverProvider(nil, nil, nil, ready), nil, landing.NotConfigured, false, ""},
		{"server synced", serverProvider(func() string { return "someone@example.com" }, nil, nil, ready),
			map[string]float64{"amp_server_up": 1, "amp_server_last_sync_timestamp_seconds": 1.7e9}, "synced", false, "account someone@example.com"},
		{"server unauthorized", serverProvider(nil, nil, nil, ready),
			map[string]float64{"amp_server_up": 0, "amp_server_requests_total{method=listThreads,code=401}": 3}, "unauthorized", true, ""},
		{"server first sync", serverProvider(nil, nil, nil, ready), map[string]float64{"amp_server_up": 0}, "first sync running", false, ""},
		{"amy none", amyProvider(cfgWith(none)), nil, landing.NotConfigured, false, ""},
		{"amy unauthorized", amyProvider(cfgWith(func(c *config.Config) {
			c.Amy = []config.AmyUpstream{{Name: "main", BaseURL: "https://amy.example/v1?key=secret"}}
		})), map[string]float64{"amy_stream_up{upstream=main}": 0, "amy_stream_reconnects_total{upstream=main,reason=unauthorized}": 1},
			"unauthorized", true, "https://amy.example/v1"},
		{"amy idle", amyProvider(cfgWith(func(c *config.Config) {
			c.Amy = []config.AmyUpstream{{Name: "main", BaseURL: "https://amy.example"}}
		})), map[string]float64{"amy_stream_up{upstream=main}": 1, "amy_turns_started_total{upstream=main}": 2}, "idle", false, "https://amy.example"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rows := tt.provider(metricsOf(t, tt.metrics))
			if len(rows) != 1 {
				t.Fatalf("%d rows", len(rows))
			}
			r := rows[0]
			if r.State != tt.state || r.Attention != tt.attention {
				t.Errorf("state %q attention %v, want %q %v", r.State, r.Attention, tt.state, tt.attention)
			}
			var conf []string
			for _, s := range r.Configured {
				v := s.Value
				if s.Problem != "" {
					v += " (" + s.Problem + ")"
				}
				conf = append(conf, v)
			}
			all := strings.Join(conf, "\n")
			if tt.configured != "" && !strings.Contains(all, tt.configured) {
				t.Errorf("configured %q lacks %q", all, tt.configured)
			}
			if strings.Contains(all, "secret") {
				t.Errorf("configured shows a secret: %q", all)
			}
		})
	}
}

// With the server source not running, its row says why: no key was found,
// or it is turned off.
func TestServerRowSaysWhyItIsOff(t *testing.T) {
	for _, c := range []struct {
		off  bool
		want string
	}{{false, "No Amp API key was found"}, {true, "amp_server.enabled: false"}} {
		rows := serverProvider(nil, func() bool { return c.off }, nil, func() bool { return true })(metricsOf(t, nil))
		if len(rows) != 1 || !strings.Contains(rows[0].Note, c.want) {
			t.Errorf("off=%v: rows %+v, want a note with %q", c.off, rows, c.want)
		}
	}
}
