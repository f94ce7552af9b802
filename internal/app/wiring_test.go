package app

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/prometheus/exporter-toolkit/web"

	"github.com/amp-exporter/amp-exporter/collector"
	"github.com/amp-exporter/amp-exporter/config"
	"github.com/amp-exporter/amp-exporter/internal/testsupport/ampservertest"
	"github.com/amp-exporter/amp-exporter/internal/testsupport/testutil"
	ampstore "github.com/amp-exporter/amp-exporter/store"
)

// builtApp is an App as New returns it, not yet running.
type builtApp struct {
	*App
	// run starts Run; the returned stop ends it and returns its error.
	run func() (stop func() error)
}

// buildTestApp builds an exporter on the configuration text and storage
// directory ("" for none) without running it.
func buildTestApp(t *testing.T, cfgText, storage string) *builtApp {
	t.Helper()
	dir := t.TempDir()
	cfgPath := filepath.Join(dir, "amp-exporter.yml")
	if err := os.WriteFile(cfgPath, []byte(cfgText), 0o644); err != nil {
		t.Fatal(err)
	}
	env := config.Env{Getenv: func(string) string { return "" }, Home: dir}
	cfg, err := config.Load(cfgPath, env)
	if err != nil {
		t.Fatal(err)
	}
	addrs, systemd, webCfg := []string{freeAddr(t)}, false, ""
	a, err := New(Options{
		ConfigFile: cfgPath, Env: env, Config: cfg,
		Logger:        slog.New(slog.NewTextHandler(io.Discard, nil)),
		TelemetryPath: "/metrics",
		Web:           &web.FlagConfig{WebListenAddresses: &addrs, WebSystemdSocket: &systemd, WebConfigFile: &webCfg},
		Limits:        ServerLimits{MaxRequests: 4, MaxConnections: 16},
		StoragePath:   storage,
		SaveInterval:  time.Hour, // only the final save
	})
	if err != nil {
		t.Fatal(err)
	}
	b := &builtApp{App: a}
	b.run = func() func() error {
		ctx, cancel := context.WithCancel(context.Background())
		ran := make(chan error, 1)
		go func() { ran <- a.Run(ctx) }()
		stopped := false
		stop := func() error {
			if stopped {
				return nil
			}
			stopped = true
			cancel()
			return <-ran
		}
		t.Cleanup(func() { _ = stop() })
		return stop
	}
	return b
}

// sourceSamples is the number of samples of a family with the given
// source label, and whether it is on /metrics at all.
func sourceSamples(t *testing.T, a *App, family, source string) (float64, bool) {
	t.Helper()
	mfs, err := a.reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var sum float64
	found := false
	for _, mf := range mfs {
		if mf.GetName() != family {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "source" && l.GetValue() == source {
					found = true
					sum += m.GetCounter().GetValue()
				}
			}
		}
	}
	return sum, found
}

// New wires the first-pass readiness itself: before Run no local pass has
// run, so neither the thread-file nor the stream-json families are on
// /metrics, the exporter is not ready and remote-write does not push;
// after the first passes they are, with complete totals. (firstpass_test.go holds a scan half-way on a
// wiring of its own; this checks the one New builds.)
func TestNewWiresFirstPassReadiness(t *testing.T) {
	dir := t.TempDir()
	for i := range 2 {
		if err := os.WriteFile(filepath.Join(dir, threadID(i)+".json"), threadDoc(i), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	a := buildTestApp(t, fmt.Sprintf("threads:\n  dirs: [%q]\namp_server:\n  enabled: false\n", dir), "")
	if _, shown := sourceSamples(t, a.App, collector.NameOf(ampstore.FamMessages), ampstore.SourceThreads); shown {
		t.Error("thread-file families on /metrics before the first scan")
	}
	if a.amp.Ready(ampstore.SourceThreads) || a.amp.Ready(ampstore.SourceStream) || a.ready.Load() {
		t.Error("a source, or the exporter, ready before Run")
	}
	if a.rw.ready() {
		t.Error("remote-write would push before the first passes (partial totals)")
	}
	stop := a.run()
	testutil.WaitUntil(t, "ready", a.ready.Load)
	if n, shown := sourceSamples(t, a.App, collector.NameOf(ampstore.FamMessages), ampstore.SourceThreads); !shown || n != 4 {
		t.Errorf("after the first scan: %v thread-file messages (shown %v), want 4", n, shown)
	}
	if !a.amp.Ready(ampstore.SourceStream) {
		t.Error("stream-json families hidden after the first pass")
	}
	if !a.rw.ready() {
		t.Error("remote-write still waits after the first passes")
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}
}

// New prices the server source's store, and restores the saved state
// before the server source is seeded: a restart shows the server's totals
// from the state at once, before (and without) a sync, on /metrics and on
// the landing page, while the restored thread files wait for their scan.
func TestNewSeedsTheServerSourceFromTheRestoredState(t *testing.T) {
	const key = "sgamp_right_key_0123456789"
	srv := ampservertest.New(key, "dev@example.com")
	for i := range 3 {
		if _, err := srv.Put(threadDoc(i), 1764590400000); err != nil {
			t.Fatal(err)
		}
	}
	keyFile := filepath.Join(t.TempDir(), "amp-key")
	if err := os.WriteFile(keyFile, []byte(key), 0o600); err != nil {
		t.Fatal(err)
	}
	storage, files := t.TempDir(), t.TempDir()
	if err := os.WriteFile(filepath.Join(files, threadID(10)+".json"), threadDoc(10), 0o644); err != nil {
		t.Fatal(err)
	}
	cfgText := fmt.Sprintf("threads:\n  dirs: [%q]\namp_server:\n  enabled: true\n  url: %s\n  api_key_file: %q\n  sync_interval: 1h\n",
		files, srv.URL, keyFile)

	first := buildTestApp(t, cfgText, storage)
	if first.amp.Ready(ampstore.SourceAmpServer) {
		t.Fatal("the server's families shown before its first sync, without a saved state")
	}
	stop := first.run()
	testutil.WaitUntil(t, "the first sync", func() bool { return first.amp.Ready(ampstore.SourceAmpServer) })
	if n, _ := sourceSamples(t, first.App, collector.NameOf(ampstore.FamMessages), ampstore.SourceAmpServer); n != 6 {
		t.Fatalf("after the first sync: %v server messages, want 6", n)
	}
	// The pricing step prices the server's own store too.
	if usd, _ := sourceSamples(t, first.App, collector.NameOf(ampstore.FamCost), ampstore.SourceAmpServer); usd <= 0 {
		t.Errorf("the server's tokens are not priced: %s{source=%q} %v", collector.NameOf(ampstore.FamCost), ampstore.SourceAmpServer, usd)
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}

	srv.Close()
	second := buildTestApp(t, cfgText, storage)
	if !second.amp.Ready(ampstore.SourceAmpServer) {
		t.Error("after a restart the server's families wait for a sync, though the state holds them")
	}
	if n, shown := sourceSamples(t, second.App, collector.NameOf(ampstore.FamMessages), ampstore.SourceAmpServer); !shown || n != 6 {
		t.Errorf("after a restart, before a sync: %v server messages (shown %v), want 6", n, shown)
	}
	// The landing page shows what /metrics shows: the server's restored
	// threads, and no count for the thread files, restored too but
	// waiting for their first scan.
	rec := httptest.NewRecorder()
	second.web.Handler.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "http://127.0.0.1:9974/", nil))
	const threadsCell = 4
	if c := row(t, rec.Body.String(), "Amp server"); c[threadsCell] != "3" {
		t.Errorf("landing page, Amp server threads before a sync: %q, want 3 (restored)", c[threadsCell])
	}
	if c := row(t, rec.Body.String(), "Thread files"); c[threadsCell] != "—" {
		t.Errorf("landing page, thread-file threads before the first scan: %q, want —", c[threadsCell])
	}
	if err := second.keeper.Close(); err != nil {
		t.Fatal(err)
	}
}
