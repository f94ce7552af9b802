package threads

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/fsnotify/fsnotify"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/amp-exporter/amp-exporter/collector"
	"github.com/amp-exporter/amp-exporter/internal/clock"
	ampstore "github.com/amp-exporter/amp-exporter/store"
)

// makeThread returns a thread file with n assistant messages of 10 input
// and 100 output tokens each, and as many Bash calls that succeeded.
func makeThread(id string, n int) []byte {
	var msgs []string
	msgs = append(msgs, `{"role":"user","messageId":0,"content":[{"type":"text","text":"go"}],"meta":{"sentAt":1770741301000}}`)
	for i := 0; i < n; i++ {
		msgs = append(msgs, fmt.Sprintf(`{"role":"assistant","messageId":%d,"content":[{"type":"tool_use","complete":true,"id":"toolu_%d","name":"Bash","input":{"cmd":"ls"}}],"state":{"type":"complete","stopReason":"tool_use"},"usage":{"model":"claude-opus-4-6","inputTokens":10,"outputTokens":100,"cacheReadInputTokens":0,"cacheCreationInputTokens":0,"maxInputTokens":168000,"totalInputTokens":10,"timestamp":"2026-02-10T16:35:08.120Z"}}`, 2*i+1, i))
		msgs = append(msgs, fmt.Sprintf(`{"role":"user","messageId":%d,"content":[{"type":"tool_result","toolUseID":"toolu_%d","run":{"status":"done","result":{"output":"a\nb\n","exitCode":0}}}]}`, 2*i+2, i))
	}
	return []byte(fmt.Sprintf("{\n  \"v\": %d,\n  \"id\": %q,\n  \"created\": 1770741300000,\n  \"agentMode\": \"smart\",\n  \"messages\": [\n%s\n  ]\n}", 3*n+1, id, strings.Join(msgs, ",\n")))
}

type fakeMetrics struct {
	mu        sync.Mutex
	errors    map[string]int
	parsed    int
	fallbacks map[string]int
	polling   bool
	missing   int
}

func (m *fakeMetrics) ParseFailed(_, reason string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.errors[reason]++
}
func (m *fakeMetrics) Parsed(string, time.Duration) { m.mu.Lock(); m.parsed++; m.mu.Unlock() }
func (m *fakeMetrics) WatcherFellBack(reason string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.fallbacks[reason]++
}
func (m *fakeMetrics) WatcherPolling(on bool) { m.mu.Lock(); m.polling = on; m.mu.Unlock() }
func (m *fakeMetrics) DirsMissing(n int)      { m.mu.Lock(); m.missing = n; m.mu.Unlock() }

func (m *fakeMetrics) snapshot() (errs map[string]int, parsed int, fallbacks map[string]int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	errs, fallbacks = map[string]int{}, map[string]int{}
	for k, v := range m.errors {
		errs[k] = v
	}
	for k, v := range m.fallbacks {
		fallbacks[k] = v
	}
	return errs, m.parsed, fallbacks
}

type harness struct {
	t       *testing.T
	dir     string
	clk     *clock.Fake
	store   *ampstore.ThreadStore
	reg     *prometheus.Registry
	metrics *fakeMetrics
	w       *Watcher
	cfg     Config // the configuration the watcher runs with (see reconfigure)
	trace   chan string
	cancel  context.CancelFunc
	done    chan error
}

func newHarness(t *testing.T, dir string, store *ampstore.ThreadStore, modify func(*Config, *Options)) *harness {
	t.Helper()
	if store == nil {
		store = ampstore.NewThreadStore(ampstore.StoreOptions{})
	}
	h := &harness{
		t:       t,
		dir:     dir,
		clk:     clock.NewFake(time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)),
		store:   store,
		reg:     prometheus.NewPedanticRegistry(),
		metrics: &fakeMetrics{errors: map[string]int{}, fallbacks: map[string]int{}},
		trace:   make(chan string, 100000),
		done:    make(chan error, 1),
	}
	h.reg.MustRegister(collector.NewAmpCollector(store, nil))
	cfg := Config{Dirs: []string{dir}, ResyncInterval: time.Hour, PollInterval: 5 * time.Second, MaxFileBytes: 1 << 20}
	opts := Options{
		Clock:      h.clk,
		Workers:    2,
		Coalesce:   100 * time.Millisecond,
		RetryDelay: 500 * time.Millisecond,
		Trace: func(ev string) {
			select {
			case h.trace <- ev:
			default:
			}
		},
	}
	if modify != nil {
		modify(&cfg, &opts)
	}
	h.cfg = cfg
	h.w = New(cfg, opts, store, h.metrics)
	ctx, cancel := context.WithCancel(context.Background())
	h.cancel = cancel
	go func() { h.done <- h.w.Run(ctx) }()
	t.Cleanup(h.stop)
	h.waitFor("first scan", func() bool { return false }, "ready")
	return h
}

func (h *harness) stop() {
	if h.cancel == nil {
		return
	}
	h.cancel()
	<-h.done
	h.cancel = nil
}

// waitFor returns once cond holds, or once the trace reports an event
// starting with one of until. While the loop is idle it advances the fake
// clock a second at a time, so coalescing and retry timers fire; the
// resync interval (an hour) is never reached.
func (h *harness) waitFor(what string, cond func() bool, until ...string) {
	h.t.Helper()
	deadline := time.After(20 * time.Second)
	for !cond() {
		select {
		case ev := <-h.trace:
			for _, u := range until {
				if strings.HasPrefix(ev, u) {
					return
				}
			}
		case <-time.After(20 * time.Millisecond):
			h.clk.Advance(time.Second)
		case <-deadline:
			h.t.Fatalf("timed out waiting for %s", what)
		}
	}
}

func (h *harness) value(name string, labels map[string]string) float64 {
	h.t.Helper()
	mfs, err := h.reg.Gather()
	if err != nil {
		h.t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
	metrics:
		for _, m := range mf.GetMetric() {
			have := map[string]string{}
			for _, lp := range m.GetLabel() {
				have[lp.GetName()] = lp.GetValue()
			}
			for k, v := range labels {
				if have[k] != v {
					continue metrics
				}
			}
			return metricValue(m)
		}
	}
	return 0
}

func metricValue(m *dto.Metric) float64 {
	switch {
	case m.Counter != nil:
		return m.Counter.GetValue()
	case m.Gauge != nil:
		return m.Gauge.GetValue()
	case m.Histogram != nil:
		return float64(m.Histogram.GetSampleCount())
	}
	return 0
}

func (h *harness) outputTokens() float64 {
	return h.value("amp_tokens_total", map[string]string{"model": "claude-opus-4-6", "token_type": "output"})
}

func (h *harness) threads() float64 {
	return h.value("amp_threads", map[string]string{"agent_mode": "medium"})
}

func (h *harness) bashDone() float64 {
	return h.value("amp_tool_calls_total", map[string]string{"tool": "Bash", "status": "done"})
}

// writeAtomic writes like the Amp CLI: to <name>.amptmp, then rename.
func (h *harness) writeAtomic(name string, data []byte) {
	h.t.Helper()
	tmp := filepath.Join(h.dir, name+".amptmp")
	if err := os.WriteFile(tmp, data, 0o644); err != nil {
		h.t.Fatal(err)
	}
	if err := os.Rename(tmp, filepath.Join(h.dir, name)); err != nil {
		h.t.Fatal(err)
	}
}

func (h *harness) writeInPlace(name string, data []byte) {
	h.t.Helper()
	if err := os.WriteFile(filepath.Join(h.dir, name), data, 0o644); err != nil {
		h.t.Fatal(err)
	}
}

const threadA = "T-019c4811-2a5e-7c3d-8e21-5b6f0a9d4c11"

func TestCreateRewriteAndIdenticalRewrite(t *testing.T) {
	h := newHarness(t, t.TempDir(), nil, nil)
	h.writeAtomic(threadA+".json", makeThread(threadA, 2))
	h.waitFor("first version", func() bool { return h.outputTokens() == 200 })
	if got := h.threads(); got != 1 {
		t.Fatalf("amp_threads = %v, want 1", got)
	}
	h.writeAtomic(threadA+".json", makeThread(threadA, 5))
	h.waitFor("rewrite", func() bool { return h.outputTokens() == 500 })
	if got := h.bashDone(); got != 5 {
		t.Fatalf("Bash done = %v, want 5", got)
	}
	// An identical rewrite is a new file version, read again, and changes
	// nothing.
	_, parsedBefore, _ := h.metrics.snapshot()
	h.writeAtomic(threadA+".json", makeThread(threadA, 5))
	h.waitFor("identical rewrite parsed", func() bool { _, p, _ := h.metrics.snapshot(); return p > parsedBefore })
	if got := h.outputTokens(); got != 500 {
		t.Fatalf("identical rewrite changed output tokens to %v", got)
	}
	if errs, _, fb := h.metrics.snapshot(); len(errs) != 0 || len(fb) != 0 {
		t.Fatalf("errors %v fallbacks %v", errs, fb)
	}
}

func TestInPlaceWrites(t *testing.T) {
	t.Parallel() // waits on quiet periods: alongside the other waiters
	h := newHarness(t, t.TempDir(), nil, nil)
	for n := 1; n <= 4; n++ {
		h.writeInPlace(threadA+".json", makeThread(threadA, n))
		want := float64(100 * n)
		h.waitFor(fmt.Sprintf("in-place write %d", n), func() bool { return h.outputTokens() == want })
	}
	if errs, _, _ := h.metrics.snapshot(); len(errs) != 0 {
		t.Fatalf("in-place writes counted errors: %v", errs)
	}
}

// Counting rules 2 and 3 (docs/counting.md): a truncated thread lowers no counter.
func TestTruncationNeverLowersCounters(t *testing.T) {
	h := newHarness(t, t.TempDir(), nil, nil)
	h.writeAtomic(threadA+".json", makeThread(threadA, 4))
	h.waitFor("4 messages", func() bool { return h.outputTokens() == 400 })
	_, parsed, _ := h.metrics.snapshot()
	h.writeAtomic(threadA+".json", makeThread(threadA, 1)) // thread:truncate
	h.waitFor("truncated version parsed", func() bool { _, p, _ := h.metrics.snapshot(); return p > parsed })
	if got := h.outputTokens(); got != 400 {
		t.Fatalf("truncation moved output tokens to %v, want 400", got)
	}
	h.writeAtomic(threadA+".json", makeThread(threadA, 6))
	h.waitFor("growth past the old maximum", func() bool { return h.outputTokens() == 600 })
}

func TestDeleteLowersThreadsButNoCounter(t *testing.T) {
	h := newHarness(t, t.TempDir(), nil, nil)
	h.writeAtomic(threadA+".json", makeThread(threadA, 3))
	h.waitFor("created", func() bool { return h.outputTokens() == 300 })
	if err := os.Remove(filepath.Join(h.dir, threadA+".json")); err != nil {
		t.Fatal(err)
	}
	h.waitFor("deleted", func() bool { return h.threads() == 0 })
	if got := h.outputTokens(); got != 300 {
		t.Fatalf("deletion moved output tokens to %v", got)
	}
	// The same thread coming back is not counted twice.
	h.writeAtomic(threadA+".json", makeThread(threadA, 3))
	h.waitFor("back", func() bool { return h.threads() == 1 })
	if got := h.outputTokens(); got != 300 {
		t.Fatalf("re-created thread counted twice: %v", got)
	}
}

func TestHalfWrittenFileIsRetriedNotCounted(t *testing.T) {
	h := newHarness(t, t.TempDir(), nil, nil)
	full := makeThread(threadA, 3)
	h.writeInPlace(threadA+".json", full[:len(full)/2])
	h.waitFor("retry scheduled", func() bool { return false }, "retry ")
	h.writeInPlace(threadA+".json", full)
	h.waitFor("complete file", func() bool { return h.outputTokens() == 300 })
	if errs, _, _ := h.metrics.snapshot(); len(errs) != 0 {
		t.Fatalf("a file caught mid-write was counted as broken: %v", errs)
	}
}

func TestBrokenFileKeepsLastGoodAndCountsOnce(t *testing.T) {
	h := newHarness(t, t.TempDir(), nil, nil)
	h.writeAtomic(threadA+".json", makeThread(threadA, 2))
	h.waitFor("good version", func() bool { return h.outputTokens() == 200 })
	h.writeAtomic(threadA+".json", []byte(`{"v": 9, "messages": [ {"role": "user"`))
	h.waitFor("counted error", func() bool { e, _, _ := h.metrics.snapshot(); return e["truncated"] == 1 })
	// Rescans of the same broken version neither re-read nor re-count it.
	h.w.Reconfigure(context.Background(), h.w.cfg)
	h.waitFor("rescan", func() bool { return false }, "reconfigured")
	if e, _, _ := h.metrics.snapshot(); e["truncated"] != 1 {
		t.Fatalf("errors after rescan: %v", e)
	}
	if got, th := h.outputTokens(), h.threads(); got != 200 || th != 1 {
		t.Fatalf("last good contribution lost: tokens %v threads %v", got, th)
	}
}

func TestStrayAndOversizedFiles(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "settings.json"), []byte(`{"amp.tools.disable": []}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "notes.txt"), []byte(`{"v":1}`), 0o644); err != nil {
		t.Fatal(err)
	}
	big := makeThread("T-big", 3000)
	if err := os.WriteFile(filepath.Join(dir, "T-big.json"), big, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, threadA+".json.amptmp"), []byte(`{"v":`), 0o644); err != nil {
		t.Fatal(err)
	}
	h := newHarness(t, dir, nil, func(c *Config, _ *Options) { c.MaxFileBytes = int64(len(big) - 1) })
	errs, parsed, _ := h.metrics.snapshot()
	if errs["not_thread"] != 1 || errs["too_large"] != 1 || len(errs) != 2 || parsed != 0 {
		t.Fatalf("errors %v parsed %d; want one not_thread and one too_large", errs, parsed)
	}
	h.w.Reconfigure(context.Background(), h.w.cfg)
	h.waitFor("rescan", func() bool { return false }, "reconfigured")
	if errs2, _, _ := h.metrics.snapshot(); errs2["not_thread"] != 1 || errs2["too_large"] != 1 {
		t.Fatalf("unchanged stray files counted again: %v", errs2)
	}
}

func TestDirectoryRemovedAndRecreated(t *testing.T) {
	t.Parallel() // waits on quiet periods: alongside the other waiters
	dir := filepath.Join(t.TempDir(), "threads")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	h := newHarness(t, dir, nil, nil)
	h.writeAtomic(threadA+".json", makeThread(threadA, 3))
	h.waitFor("created", func() bool { return h.outputTokens() == 300 })
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	h.waitFor("directory gone", func() bool { return h.threads() == 0 })
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	h.writeAtomic(threadA+".json", makeThread(threadA, 3))
	h.writeAtomic("T-other.json", makeThread("T-other", 1))
	h.waitFor("directory back", func() bool { return h.threads() == 2 && h.outputTokens() == 400 })
	// Back under inotify: a rewrite shows without waiting for a poll.
	h.writeAtomic("T-other.json", makeThread("T-other", 2))
	h.waitFor("rewrite after return", func() bool { return h.outputTokens() == 500 })
	if _, _, fb := h.metrics.snapshot(); len(fb) != 0 {
		t.Fatalf("a removed directory caused a fallback: %v", fb)
	}
}

func TestMissingDirectoryAtStart(t *testing.T) {
	t.Parallel() // waits on quiet periods: alongside the other waiters
	dir := filepath.Join(t.TempDir(), "not-yet")
	h := newHarness(t, dir, nil, nil) // becomes ready although the directory is missing
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	h.writeAtomic(threadA+".json", makeThread(threadA, 1))
	h.waitFor("directory appeared", func() bool { return h.outputTokens() == 100 })
}

func TestOverflowFallsBackToPolling(t *testing.T) {
	t.Parallel() // waits on quiet periods: alongside the other waiters
	h := newHarness(t, t.TempDir(), nil, nil)
	h.writeAtomic(threadA+".json", makeThread(threadA, 1))
	h.waitFor("created", func() bool { return h.outputTokens() == 100 })
	h.w.fsw.Errors <- fsnotify.ErrEventOverflow
	h.waitFor("fallback", func() bool { return false }, "fallback overflow")
	h.writeAtomic(threadA+".json", makeThread(threadA, 2))
	h.writeAtomic("T-other.json", makeThread("T-other", 1))
	h.waitFor("polled", func() bool { return h.outputTokens() == 300 && h.threads() == 2 })
	_, _, fb := h.metrics.snapshot()
	if fb["overflow"] != 1 {
		t.Fatalf("fallbacks = %v", fb)
	}
	h.metrics.mu.Lock()
	polling := h.metrics.polling
	h.metrics.mu.Unlock()
	if !polling {
		t.Fatal("watcher does not report polling")
	}
}

func TestFailedWatchFallsBackToPolling(t *testing.T) {
	t.Parallel() // waits on quiet periods: alongside the other waiters
	h := newHarness(t, t.TempDir(), nil, func(_ *Config, o *Options) {
		o.addWatch = func(*fsnotify.Watcher, string) error { return syscall.ENOSPC }
	})
	if _, _, fb := h.metrics.snapshot(); fb["add_failed"] != 1 {
		t.Fatalf("fallbacks = %v", fb)
	}
	h.writeAtomic(threadA+".json", makeThread(threadA, 2))
	h.waitFor("polled", func() bool { return h.outputTokens() == 200 })
}

// Counting rule 5 (docs/counting.md): a restart on saved state reads no
// unchanged file and keeps what deleted threads counted.
func TestRestartFromStateReadsNothingAndKeepsDeleted(t *testing.T) {
	dir := t.TempDir()
	h := newHarness(t, dir, nil, nil)
	h.writeAtomic(threadA+".json", makeThread(threadA, 3))
	h.writeAtomic("T-gone.json", makeThread("T-gone", 2))
	h.waitFor("both", func() bool { return h.outputTokens() == 500 })
	h.stop()
	state := h.store.Export()

	if err := os.Remove(filepath.Join(dir, "T-gone.json")); err != nil {
		t.Fatal(err)
	}
	restored := ampstore.NewThreadStore(ampstore.StoreOptions{})
	if err := restored.Import(state); err != nil {
		t.Fatal(err)
	}
	h2 := newHarness(t, dir, restored, nil)
	if got := h2.outputTokens(); got != 500 {
		t.Fatalf("after restart output tokens = %v, want 500 (deleted thread kept)", got)
	}
	if got := h2.threads(); got != 1 {
		t.Fatalf("after restart amp_threads = %v, want 1", got)
	}
	if _, parsed, _ := h2.metrics.snapshot(); parsed != 0 {
		t.Fatalf("restart re-read %d unchanged files", parsed)
	}
}
