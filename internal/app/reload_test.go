package app

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/exporter-toolkit/web"

	"github.com/amp-exporter/amp-exporter/config"
	"github.com/amp-exporter/amp-exporter/internal/testsupport/testutil"
	"github.com/amp-exporter/amp-exporter/internal/testsupport/threadgen"
)

// testExporter is an app built from options, running, with its logs.
type testExporter struct {
	*App
	cfgPath string
	logs    *syncWriter
	addr    string // of the main HTTP server
	// stop ends Run (once) and returns its error.
	stop func() error
}

// startTestApp builds and runs an exporter on the configuration text, with
// an environment of its own (no key, no Amp CLI files unless env says).
func startTestApp(t *testing.T, cfgText string, env map[string]string, opts ...func(*Options)) *testExporter {
	t.Helper()
	dir := t.TempDir()
	cfgPath := filepath.Join(dir, "amp-exporter.yml")
	if err := os.WriteFile(cfgPath, []byte(cfgText), 0o644); err != nil {
		t.Fatal(err)
	}
	cenv := config.Env{Getenv: func(k string) string { return env[k] }, Home: dir}
	cfg, err := config.Load(cfgPath, cenv)
	if err != nil {
		t.Fatal(err)
	}
	logs := &syncWriter{}
	addrs, systemd, webCfg := []string{freeAddr(t)}, false, ""
	o := Options{
		ConfigFile: cfgPath, Env: cenv, Config: cfg,
		Logger:        slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
		TelemetryPath: "/metrics",
		Web:           &web.FlagConfig{WebListenAddresses: &addrs, WebSystemdSocket: &systemd, WebConfigFile: &webCfg},
		Limits:        ServerLimits{MaxRequests: 4, MaxConnections: 16},
	}
	for _, f := range opts {
		f(&o)
	}
	a, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	ran := make(chan error, 1)
	go func() { ran <- a.Run(ctx) }()
	e := &testExporter{App: a, cfgPath: cfgPath, logs: logs, addr: addrs[0], stop: sync.OnceValue(func() error {
		cancel()
		return <-ran
	})}
	t.Cleanup(func() {
		if err := e.stop(); err != nil {
			t.Errorf("Run: %v", err)
		}
	})
	testutil.WaitUntil(t, "the first scan", a.ready.Load)
	// The web server starts beside the sources: a first scan of an empty
	// directory can be done before it listens.
	testutil.WaitUntil(t, "the web server", func() bool {
		c, err := net.Dial("tcp", e.addr)
		if err == nil {
			c.Close()
		}
		return err == nil
	})
	return e
}

// reloadWith writes the configuration file and reloads it as SIGHUP and
// /-/reload do (through Run's reload goroutine).
func (e *testExporter) reloadWith(t *testing.T, cfgText string) error {
	t.Helper()
	if err := os.WriteFile(e.cfgPath, []byte(cfgText), 0o644); err != nil {
		t.Fatal(err)
	}
	reply := make(chan error, 1)
	e.reloads <- reloadRequest{reply: reply}
	return <-reply
}

var restartLine = regexp.MustCompile(`level=WARN msg="configuration change needs a restart[^"]*" section=(\S+)`)

// restartWarnings are the sections a "needs a restart" warning named, in
// the order logged.
func (e *testExporter) restartWarnings() []string {
	var out []string
	for _, m := range restartLine.FindAllStringSubmatch(e.logs.String(), -1) {
		out = append(out, m[1])
	}
	return out
}

// value is the sum of a family's samples whose labels include want.
func (e *testExporter) value(t *testing.T, name string, want map[string]string) (float64, bool) {
	t.Helper()
	mfs, err := e.reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var sum float64
	found := false
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
	next:
		for _, m := range mf.GetMetric() {
			have := map[string]string{}
			for _, l := range m.GetLabel() {
				have[l.GetName()] = l.GetValue()
			}
			for k, v := range want {
				if have[k] != v {
					continue next
				}
			}
			found = true
			switch {
			case m.GetCounter() != nil:
				sum += m.GetCounter().GetValue()
			case m.GetGauge() != nil:
				sum += m.GetGauge().GetValue()
			}
		}
	}
	return sum, found
}

func (e *testExporter) waitValue(t *testing.T, name string, labels map[string]string, cond func(float64) bool) {
	t.Helper()
	testutil.WaitUntil(t, fmt.Sprintf("%s%v", name, labels), func() bool {
		v, ok := e.value(t, name, labels)
		return ok && cond(v)
	})
}

func mkdir(t *testing.T, parts ...string) string {
	t.Helper()
	d := filepath.Join(parts...)
	if err := os.MkdirAll(d, 0o755); err != nil {
		t.Fatal(err)
	}
	return d
}

// A reload of each configuration section either applies it or says, once
// and naming the section, that it needs a restart; the other sections of
// the same reload still apply.
func TestReloadEverySection(t *testing.T) {
	const off = "amp_server:\n  enabled: false\n"
	tests := []struct {
		section string
		// before and after are the configuration texts; dir is the test's
		// own temporary directory.
		before, after func(dir string) string
		env           map[string]string
		prepare       func(t *testing.T, dir string)
		// restart lists the sections that must warn (once each).
		restart []string
		check   func(t *testing.T, e *testExporter, dir string)
	}{{
		section: "threads",
		prepare: func(t *testing.T, dir string) {
			mkdir(t, dir, "a")
			name, data := threadgen.New(threadgen.Options{Threads: 1, TotalBytes: 20000, Seed: 1}).Thread(0)
			if err := os.WriteFile(filepath.Join(mkdir(t, dir, "b"), name), data, 0o644); err != nil {
				t.Fatal(err)
			}
		},
		before: func(dir string) string {
			return fmt.Sprintf("threads:\n  dirs: [%q]\n%s", filepath.Join(dir, "a"), off)
		},
		after: func(dir string) string {
			return fmt.Sprintf("threads:\n  dirs: [%q, %q]\n%s", filepath.Join(dir, "a"), filepath.Join(dir, "b"), off)
		},
		check: func(t *testing.T, e *testExporter, _ string) {
			e.waitValue(t, "amp_messages_total", map[string]string{"source": "threads"}, func(v float64) bool { return v > 0 })
		},
	}, {
		section: "streams",
		prepare: func(t *testing.T, dir string) {
			run, err := os.ReadFile("../../parser/streamjson/testdata/success-run.jsonl")
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(mkdir(t, dir, "captures"), "run.jsonl"), run, 0o644); err != nil {
				t.Fatal(err)
			}
			mkdir(t, dir, "threads")
		},
		before: func(dir string) string {
			return fmt.Sprintf("threads:\n  dirs: [%q]\n%s", filepath.Join(dir, "threads"), off)
		},
		after: func(dir string) string {
			return fmt.Sprintf("threads:\n  dirs: [%q]\nstreams:\n  dirs: [%q]\n  ingest:\n    enabled: false\n    max_body_bytes: 32MiB\n%s",
				filepath.Join(dir, "threads"), filepath.Join(dir, "captures"), off)
		},
		check: func(t *testing.T, e *testExporter, _ string) {
			e.waitValue(t, "amp_executions_total", map[string]string{"outcome": "success"}, func(v float64) bool { return v == 1 })
			if e.ingestEnabled() || e.ingestConfig().MaxBodyBytes != 32<<20 {
				t.Errorf("streams.ingest not applied: enabled %v, max_body_bytes %d", e.ingestEnabled(), e.ingestConfig().MaxBodyBytes)
			}
		},
	}, {
		section: "amp_server (off)",
		prepare: func(t *testing.T, dir string) { mkdir(t, dir, "threads") },
		before: func(dir string) string {
			return fmt.Sprintf("threads:\n  dirs: [%q]\n%s", filepath.Join(dir, "threads"), off)
		},
		after: func(dir string) string {
			return fmt.Sprintf("threads:\n  dirs: [%q]\namp_server:\n  enabled: true\n", filepath.Join(dir, "threads"))
		},
		env:     map[string]string{"AMP_API_KEY": "sgamp_user_01234567890abcdef", "AMP_URL": "http://127.0.0.1:1/"},
		restart: []string{"amp_server"},
	}, {
		section: "amp_server (on)",
		prepare: func(t *testing.T, dir string) { mkdir(t, dir, "threads") },
		before: func(dir string) string {
			return fmt.Sprintf("threads:\n  dirs: [%q]\namp_server:\n  enabled: true\n", filepath.Join(dir, "threads"))
		},
		after: func(dir string) string {
			return fmt.Sprintf("threads:\n  dirs: [%q]\namp_server:\n  enabled: true\n  sync_interval: 2m\nlimits:\n  max_file_bytes: 1MiB\n", filepath.Join(dir, "threads"))
		},
		env:     map[string]string{"AMP_API_KEY": "sgamp_user_01234567890abcdef", "AMP_URL": "http://127.0.0.1:1/"},
		restart: []string{"amp_server"},
		check: func(t *testing.T, e *testExporter, _ string) {
			if !strings.Contains(e.logs.String(), `a change of amp_server, limits.max_file_bytes takes effect at the next restart`) {
				t.Errorf("the warning does not name both keys:\n%s", e.logs.String())
			}
		},
	}, {
		section: "amy",
		prepare: func(t *testing.T, dir string) { mkdir(t, dir, "threads") },
		before: func(dir string) string {
			return fmt.Sprintf("threads:\n  dirs: [%q]\n%samy:\n  - name: prod\n    base_url: %s\n    proxy:\n      listen_address: %s\n",
				filepath.Join(dir, "threads"), off, upstreamA(t), proxyAddr(t, dir))
		},
		after: func(dir string) string {
			return fmt.Sprintf("threads:\n  dirs: [%q]\n%samy:\n  - name: prod\n    base_url: %s\n    proxy:\n      listen_address: %s\n  - name: staging\n    base_url: %s\n    proxy:\n      listen_address: 127.0.0.1:1\n",
				filepath.Join(dir, "threads"), off, upstreamB(t), proxyAddr(t, dir), upstreamB(t))
		},
		restart: []string{"amy"},
		check: func(t *testing.T, e *testExporter, dir string) {
			if _, ok := e.value(t, "amy_turns_started_total", map[string]string{"upstream": "staging"}); !ok {
				t.Error("the upstream added by the reload has no series")
			}
			// The running proxy forwards to the new base_url.
			testutil.WaitUntil(t, "the proxy answering", func() bool {
				resp, err := http.Get("http://" + proxyAddr(t, dir) + "/v1/whoami")
				if err != nil {
					return false
				}
				defer resp.Body.Close()
				b, _ := io.ReadAll(resp.Body)
				return string(b) == "B"
			})
			if !strings.Contains(e.logs.String(), `amy[\"staging\"].proxy`) {
				t.Errorf("the warning does not name the proxy added:\n%s", e.logs.String())
			}
		},
	}, {
		section: "pricing",
		prepare: func(t *testing.T, dir string) {
			mkdir(t, dir, "threads")
			if err := os.WriteFile(filepath.Join(dir, "prices.json"), []byte(`{"claude-x": {"input_cost_per_token": 0.000003, "output_cost_per_token": 0.000015}}`), 0o644); err != nil {
				t.Fatal(err)
			}
		},
		before: func(dir string) string {
			return fmt.Sprintf("threads:\n  dirs: [%q]\n%s", filepath.Join(dir, "threads"), off)
		},
		after: func(dir string) string {
			return fmt.Sprintf("threads:\n  dirs: [%q]\n%spricing:\n  file: %q\n", filepath.Join(dir, "threads"), off, filepath.Join(dir, "prices.json"))
		},
		check: func(t *testing.T, e *testExporter, _ string) {
			if _, ok := e.value(t, "amp_exporter_pricing_info", map[string]string{"source": "litellm-file"}); !ok {
				t.Error("the price file of the reload is not in use")
			}
		},
	}, {
		section: "limits",
		prepare: func(t *testing.T, dir string) { mkdir(t, dir, "threads") },
		before: func(dir string) string {
			return fmt.Sprintf("threads:\n  dirs: [%q]\n%s", filepath.Join(dir, "threads"), off)
		},
		after: func(dir string) string {
			return fmt.Sprintf("threads:\n  dirs: [%q]\n%slimits:\n  max_label_values: 7\n  max_file_bytes: 1MiB\n", filepath.Join(dir, "threads"), off)
		},
		check: func(t *testing.T, e *testExporter, _ string) {
			if got := e.labels.Max(); got != 7 {
				t.Errorf("limits.max_label_values %d after the reload, want 7", got)
			}
		},
	}, {
		section: "remote_write",
		prepare: func(t *testing.T, dir string) { mkdir(t, dir, "threads") },
		before: func(dir string) string {
			return fmt.Sprintf("threads:\n  dirs: [%q]\n%s", filepath.Join(dir, "threads"), off)
		},
		after: func(dir string) string {
			return fmt.Sprintf("threads:\n  dirs: [%q]\n%sremote_write:\n  - url: %s\n    interval: 1h\n    external_labels: {user: alice}\n",
				filepath.Join(dir, "threads"), off, receiverURL(t, dir))
		},
		check: func(t *testing.T, e *testExporter, dir string) {
			testutil.WaitUntil(t, "a push to the receiver added by the reload", func() bool { return receivers[dir].requests.Load() > 0 })
		},
	}, {
		section: "otlp",
		prepare: func(t *testing.T, dir string) { mkdir(t, dir, "threads") },
		before: func(dir string) string {
			return fmt.Sprintf("threads:\n  dirs: [%q]\n%s", filepath.Join(dir, "threads"), off)
		},
		after: func(dir string) string {
			return fmt.Sprintf("threads:\n  dirs: [%q]\n%sotlp:\n  - endpoint: %s/v1/metrics\n    interval: 1h\n",
				filepath.Join(dir, "threads"), off, receiverURL(t, dir))
		},
		check: func(t *testing.T, e *testExporter, dir string) {
			testutil.WaitUntil(t, "an OTLP push to the receiver added by the reload", func() bool { return receivers[dir].requests.Load() > 0 })
		},
	}}
	for _, tc := range tests {
		t.Run(tc.section, func(t *testing.T) {
			dir := t.TempDir()
			tc.prepare(t, dir)
			e := startTestApp(t, tc.before(dir), tc.env)
			if w := e.restartWarnings(); len(w) > 0 {
				t.Fatalf("start-up warned of restarts: %v", w)
			}
			before := e.configText()
			if err := e.reloadWith(t, tc.after(dir)); err != nil {
				t.Fatalf("reload: %v\n%s", err, e.logs.String())
			}
			if got := e.restartWarnings(); !slices.Equal(got, tc.restart) {
				t.Errorf("restart warnings for sections %v, want %v\n%s", got, tc.restart, e.logs.String())
			}
			if v, _ := e.value(t, "amp_exporter_config_last_reload_successful", nil); v != 1 {
				t.Errorf("amp_exporter_config_last_reload_successful %v, want 1", v)
			}
			if e.configText() == before {
				t.Errorf("/config still shows the configuration before the reload:\n%s", before)
			}
			if tc.check != nil {
				tc.check(t, e, dir)
			}
		})
	}
}

// A configuration one step refuses (a price file that does not load)
// changes nothing, not even the sections before or after it in the list.
func TestRefusedReloadChangesNothing(t *testing.T) {
	dir := t.TempDir()
	mkdir(t, dir, "a")
	name, data := threadgen.New(threadgen.Options{Threads: 1, TotalBytes: 20000, Seed: 1}).Thread(0)
	if err := os.WriteFile(filepath.Join(mkdir(t, dir, "b"), name), data, 0o644); err != nil {
		t.Fatal(err)
	}
	recv := newCountingReceiver(t)
	e := startTestApp(t, fmt.Sprintf("threads:\n  dirs: [%q]\namp_server:\n  enabled: false\n", filepath.Join(dir, "a")), nil)
	before := e.configText()
	err := e.reloadWith(t, fmt.Sprintf("threads:\n  dirs: [%q]\namp_server:\n  enabled: false\nlimits:\n  max_label_values: 7\n"+
		"pricing:\n  file: %q\nremote_write:\n  - url: %s\n    external_labels: {user: alice}\n",
		filepath.Join(dir, "b"), filepath.Join(dir, "no-such-prices.json"), recv.srv.URL))
	if err == nil || !strings.Contains(err.Error(), "pricing") {
		t.Fatalf("reload with a missing price file: %v, want an error naming pricing", err)
	}
	if v, _ := e.value(t, "amp_exporter_config_last_reload_successful", nil); v != 0 {
		t.Errorf("amp_exporter_config_last_reload_successful %v, want 0", v)
	}
	if e.configText() != before || e.labels.Max() != 100 {
		t.Errorf("a refused configuration was applied: max_label_values %d\n%s", e.labels.Max(), e.configText())
	}
	// Nothing of it ran: the thread directory it adds is not read and
	// the receiver it adds gets nothing (both would within milliseconds).
	time.Sleep(300 * time.Millisecond)
	if v, _ := e.value(t, "amp_messages_total", map[string]string{"source": "threads"}); v != 0 || recv.requests.Load() != 0 {
		t.Errorf("a refused configuration ran: %v thread messages, %d pushes", v, recv.requests.Load())
	}
}

// Every section of the configuration file has its apply step, named after
// it: a new section cannot be added without saying what a reload does
// with it.
func TestEverySectionHasAnApplyStep(t *testing.T) {
	e := startTestApp(t, fmt.Sprintf("threads:\n  dirs: [%q]\namp_server:\n  enabled: false\n", t.TempDir()), nil)
	var steps []string
	for _, s := range e.steps {
		steps = append(steps, s.name)
	}
	ct := reflect.TypeOf(config.Config{})
	for i := range ct.NumField() {
		section := strings.Split(ct.Field(i).Tag.Get("yaml"), ",")[0]
		if !slices.Contains(steps, section) {
			t.Errorf("section %q has no apply step (steps: %v)", section, steps)
		}
	}
}

// Test servers shared by a case's before and after texts, by directory.
var (
	upstreams = map[string]*httptest.Server{}
	proxies   = map[string]string{}
	receivers = map[string]*countingReceiver{}
)

func answering(t *testing.T, body string) string {
	if s, ok := upstreams[t.Name()+body]; ok {
		return s.URL
	}
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, body) }))
	// Forgotten with the server: the test's name is the same in every
	// run of go test -count=N, and a later run must not get a closed one.
	t.Cleanup(func() {
		s.Close()
		delete(upstreams, t.Name()+body)
	})
	upstreams[t.Name()+body] = s
	return s.URL
}

func upstreamA(t *testing.T) string { return answering(t, "A") }
func upstreamB(t *testing.T) string { return answering(t, "B") }

func proxyAddr(t *testing.T, dir string) string {
	if a, ok := proxies[dir]; ok {
		return a
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	proxies[dir] = l.Addr().String()
	l.Close()
	return proxies[dir]
}

func receiverURL(t *testing.T, dir string) string {
	if r, ok := receivers[dir]; ok {
		return r.srv.URL
	}
	receivers[dir] = newCountingReceiver(t)
	return receivers[dir].srv.URL
}

// A reload of an unchanged file applies and warns of no restart, with
// every source on (the parts fixed at start compare equal to themselves).
func TestReloadOfAnUnchangedFileWarnsOfNothing(t *testing.T) {
	dir := t.TempDir()
	text := fmt.Sprintf("threads:\n  dirs: [%q]\nstreams:\n  dirs: [%q]\namp_server:\n  enabled: true\n  http_client:\n    tls_config:\n      insecure_skip_verify: false\n"+
		"amy:\n  - name: prod\n    base_url: %s\n    turns: [T-1]\n    proxy:\n      listen_address: %s\n"+
		"remote_write:\n  - url: %s\n    interval: 1h\n    external_labels: {user: alice}\n",
		mkdir(t, dir, "threads"), mkdir(t, dir, "captures"), upstreamA(t), proxyAddr(t, dir), receiverURL(t, dir))
	e := startTestApp(t, text, map[string]string{"AMP_API_KEY": "sgamp_user_01234567890abcdef", "AMP_URL": "http://127.0.0.1:1/"})
	for range 2 {
		if err := e.reloadWith(t, text); err != nil {
			t.Fatalf("reload: %v", err)
		}
	}
	if w := e.restartWarnings(); len(w) > 0 {
		t.Errorf("an unchanged file warned of restarts for %v\n%s", w, e.logs.String())
	}
}
