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
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/amp-exporter/amp-exporter/collector"
	"github.com/amp-exporter/amp-exporter/config"
	"github.com/amp-exporter/amp-exporter/internal/clock"
	"github.com/amp-exporter/amp-exporter/internal/testsupport/ampservertest"
	"github.com/amp-exporter/amp-exporter/parser/thread"
	"github.com/amp-exporter/amp-exporter/source/threads"
	ampstore "github.com/amp-exporter/amp-exporter/store"
)

// heldStore holds the watcher's first scan after `after` files were
// counted, until hold is closed: a slow first scan, made deterministic.
type heldStore struct {
	*ampstore.ThreadStore
	after   int
	n       int
	mu      sync.Mutex
	reached chan struct{}
	hold    chan struct{}
}

func (s *heldStore) Apply(path string, v ampstore.FileVersion, sum *thread.Summary) bool {
	s.mu.Lock()
	s.n++
	n := s.n
	s.mu.Unlock()
	ok := s.ThreadStore.Apply(path, v, sum)
	if n == s.after {
		close(s.reached)
		<-s.hold
	}
	return ok
}

// TestNoPartialTotalsDuringFirstScan scrapes /metrics, as the exporter
// serves it, while the first scan of a thread directory has counted half
// of its threads: the thread-file families must be absent (a partial total
// would read as a counter reset after the backfilled history or a
// restart), the landing page must say the scan is running, and after the
// scan every total is complete.
func TestNoPartialTotalsDuringFirstScan(t *testing.T) {
	const files = 20
	dir := t.TempDir()
	for i := range files {
		if err := os.WriteFile(filepath.Join(dir, threadID(i)+".json"), threadDoc(i), 0o644); err != nil {
			t.Fatal(err)
		}
	}

	// The wiring of run(), with a store that holds the scan half-way.
	reg := prometheus.NewRegistry()
	metrics := collector.NewExporterMetrics(reg)
	st := ampstore.NewThreadStore(ampstore.StoreOptions{})
	held := &heldStore{ThreadStore: st, after: files / 2, reached: make(chan struct{}), hold: make(chan struct{})}
	amp := collector.NewAmpCollector(st, nil)
	var ready atomic.Bool
	amp.SetReady(ampstore.SourceThreads, ready.Load)
	reg.MustRegister(amp)
	scanned := make(chan struct{})
	cfg := config.Default()
	cfg.Threads.Dirs = []string{dir}
	cfg.Streams.Ingest.Enabled = false
	w := threads.New(threads.ConfigOf(cfg), threads.Options{
		Clock: clock.Real{}, Workers: 1,
		OnFirstScan: func() { ready.Store(true); close(scanned) },
	}, held, metrics)
	mux := http.NewServeMux()
	if err := routes(mux, routeDeps{
		telemetryPath: "/metrics", registry: reg, ready: &ready, reloads: make(chan reloadRequest),
		config: func() string { return "" }, logger: slog.New(slog.DiscardHandler),
		sources: sourceProviders(landingInputs{cfg: func() *config.Config { return cfg }, ready: ready.Load,
			threads: storeThreads(st, nil), shown: amp.Ready}),
	}); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(mux)
	defer srv.Close()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	}()

	<-held.reached
	if n := st.PresentThreads(); n != files/2 {
		t.Fatalf("the store holds %d threads half-way, want %d: the scrape below would prove nothing", n, files/2)
	}
	during := scrape(t, srv.URL)
	for name, mf := range during {
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "source" && l.GetValue() == ampstore.SourceThreads && strings.HasPrefix(name, "amp_") && !strings.HasPrefix(name, "amp_exporter_") {
					t.Errorf("during the first scan: %s{source=%q} = %v, a part of the total", name, l.GetValue(), m.GetCounter().GetValue())
				}
			}
		}
	}
	for _, name := range []string{collector.NameThreads, collector.NameOf(ampstore.FamContextBucket)} {
		if _, ok := during[name]; ok {
			t.Errorf("during the first scan: %s is shown", name)
		}
	}
	if _, ok := during[collector.NameParseDuration]; !ok {
		t.Errorf("the exporter's own metrics are hidden during the first scan")
	}
	if page := get(t, srv.URL+"/"); !strings.Contains(page, "first scan running") || !strings.Contains(page, "First pass running: Thread files") ||
		strings.Contains(page, "Nothing counted yet") {
		t.Errorf("the landing page during the first scan does not say the scan is running")
	}

	close(held.hold)
	<-scanned
	after := scrape(t, srv.URL)
	got := map[string]float64{}
	for _, m := range after[collector.NameOf(ampstore.FamMessages)].GetMetric() {
		for _, l := range m.GetLabel() {
			if l.GetName() == "role" {
				got[l.GetValue()] = m.GetCounter().GetValue()
			}
		}
	}
	if got["user"] != files || got["assistant"] != files {
		t.Errorf("after the first scan: messages %v, want %d of each", got, files)
	}
	if page := get(t, srv.URL+"/"); strings.Contains(page, "First pass running") {
		t.Errorf("the landing page still says a first pass is running")
	}
}

func threadID(i int) string { return fmt.Sprintf("T-%08d-0000-4000-8000-000000000000", i) }

// threadDoc is a small thread: one prompt, one answer.
func threadDoc(i int) []byte {
	return []byte(`{"v":1,"id":"` + threadID(i) + `","created":1764590400000,"agentMode":"smart","messages":[
 {"role":"user","messageId":0,"content":[{"type":"text","text":"hi"}]},
 {"role":"assistant","messageId":1,"content":[{"type":"text","text":"ok"}],
  "state":{"type":"complete","stopReason":"end_turn"},
  "usage":{"model":"claude-sonnet-4-5","inputTokens":10,"outputTokens":100}}]}`)
}

func get(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func scrape(t *testing.T, base string) map[string]*dto.MetricFamily {
	t.Helper()
	p := expfmt.NewTextParser(model.UTF8Validation)
	mfs, err := p.TextToMetricFamilies(strings.NewReader(get(t, base+"/metrics")))
	if err != nil {
		t.Fatal(err)
	}
	return mfs
}

// The Amp server's families wait for its first complete sync: before it
// they would hold a part of the account's totals (or zeros). A state that
// was restored holds complete totals, shown at once, even while the server
// cannot be reached.
func TestServerFamiliesWaitForFirstSync(t *testing.T) {
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
	cfg := config.Default()
	cfg.AmpServer.Enabled = config.AmpServerOn
	cfg.AmpServer.URL = srv.URL
	cfg.AmpServer.APIKeyFile = keyFile
	cfg.AmpServer.SyncInterval = model.Duration(time.Hour)
	env := config.Env{Getenv: func(string) string { return "" }, Home: t.TempDir()}
	start := func(restore *ampstore.State) (*ampServerSource, *collector.AmpCollector, *prometheus.Registry) {
		t.Helper()
		reg := prometheus.NewRegistry()
		labels := ampstore.NewLabelCap(100, nil)
		local := ampstore.NewThreadStore(ampstore.StoreOptions{Labels: labels})
		streams := ampstore.NewStreamStore(labels, time.Now)
		amp := collector.NewAmpCollector(local, streams)
		src, err := newServerSource(cfg, env, slog.New(slog.DiscardHandler), reg, labels, collector.NewExporterMetrics(reg), local, streams, amp)
		if err != nil || src == nil {
			t.Fatalf("server source: %v %v", src, err)
		}
		reg.MustRegister(amp)
		if restore != nil {
			if err := src.store.Import(restore); err != nil {
				t.Fatal(err)
			}
		}
		src.seed(local, streams)
		return src, amp, reg
	}
	serverMessages := func(reg *prometheus.Registry) (float64, bool) {
		mfs, err := reg.Gather()
		if err != nil {
			t.Fatal(err)
		}
		var n float64
		found := false
		for _, mf := range mfs {
			if mf.GetName() != collector.NameOf(ampstore.FamMessages) {
				continue
			}
			for _, m := range mf.GetMetric() {
				for _, l := range m.GetLabel() {
					if l.GetName() == "source" && l.GetValue() == ampstore.SourceAmpServer {
						n += m.GetCounter().GetValue()
						found = true
					}
				}
			}
		}
		return n, found
	}

	src, amp, reg := start(nil)
	if n, shown := serverMessages(reg); shown || amp.Ready(ampstore.SourceAmpServer) {
		t.Fatalf("before the first sync: server messages shown (%v, %v)", n, shown)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- src.syncer.Run(ctx, src.firstScan) }()
	src.scanned()
	deadline := time.Now().Add(30 * time.Second)
	for !amp.Ready(ampstore.SourceAmpServer) {
		if time.Now().After(deadline) {
			t.Fatal("the server's families are still hidden after the first sync")
		}
		time.Sleep(5 * time.Millisecond)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if n, shown := serverMessages(reg); !shown || n != 6 {
		t.Fatalf("after the first sync: server messages %v (shown %v), want 6", n, shown)
	}

	// A restart with the state: shown at once, the server gone.
	saved := src.store.Export()
	srv.Close()
	_, amp, reg = start(saved)
	if n, shown := serverMessages(reg); !shown || n != 6 || !amp.Ready(ampstore.SourceAmpServer) {
		t.Fatalf("restored state: server messages %v (shown %v), want 6 at once", n, shown)
	}
}
