package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/amp-exporter/amp-exporter/collector"
	"github.com/amp-exporter/amp-exporter/source/streams"
	ampstore "github.com/amp-exporter/amp-exporter/store"
)

// ingestRun is one whole stream-json run of session id (tokens: 15 input,
// 500 cache read, 150 output), split where its pipeline pauses.
func ingestRun(id string) (head, tail string) {
	lines := []string{
		`{"type":"system","subtype":"init","cwd":"/w","session_id":"` + id + `","tools":["Bash"],"mcp_servers":[]}`,
		`{"type":"user","message":{"role":"user","content":[{"type":"text","text":"go"}]},"parent_tool_use_id":null,"session_id":"` + id + `"}`,
		`{"type":"assistant","message":{"type":"message","role":"assistant","content":[{"type":"tool_use","id":"toolu_1","name":"Bash","input":{"cmd":"ls"}}],"stop_reason":"tool_use","usage":{"input_tokens":10,"cache_read_input_tokens":500,"output_tokens":100,"max_tokens":168000}},"parent_tool_use_id":null,"session_id":"` + id + `"}`,
		`{"type":"user","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":"a","is_error":false}]},"parent_tool_use_id":null,"session_id":"` + id + `"}`,
		`{"type":"assistant","message":{"type":"message","role":"assistant","content":[{"type":"text","text":"done"}],"stop_reason":"end_turn","usage":{"input_tokens":5,"output_tokens":50,"max_tokens":168000}},"parent_tool_use_id":null,"session_id":"` + id + `"}`,
		`{"type":"result","subtype":"success","duration_ms":12500,"is_error":false,"num_turns":2,"result":"done","session_id":"` + id + `"}`,
	}
	return strings.Join(lines[:3], "\n") + "\n", strings.Join(lines[3:], "\n") + "\n"
}

// pausedStdin gives head at once, then tail once release is closed: a
// pipeline whose run is still going.
type pausedStdin struct {
	head, tail io.Reader
	release    <-chan struct{}
}

func (p *pausedStdin) Read(b []byte) (int, error) {
	if n, err := p.head.Read(b); n > 0 || err != io.EOF {
		return n, err
	}
	<-p.release
	return p.tail.Read(b)
}

type noMetrics struct{}

func (noMetrics) ParseFailed(string, string) {}

// ingestEndpoint is the exporter's real ingest handler, serving at most
// slots requests at once, over a stream store; counted sums what it
// counted of a family.
func ingestEndpoint(t *testing.T, slots int, onStatus func(int)) (url string, counted func(name string) float64) {
	t.Helper()
	st := ampstore.NewStreamStore(ampstore.NewLabelCap(100, nil), nil)
	h := streams.NewIngestHandler(func() streams.IngestConfig {
		return streams.IngestConfig{MaxLineBytes: 1 << 20, MaxBodyBytes: 1 << 30, MaxConcurrent: slots, ReadTimeout: time.Minute}
	}, st, noMetrics{}, nil)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec := &statusWriter{ResponseWriter: w}
		h.ServeHTTP(rec, r)
		onStatus(rec.status)
	}))
	t.Cleanup(srv.Close)
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(collector.NewAmpCollector(ampstore.NewThreadStore(ampstore.StoreOptions{}), st))
	return srv.URL, func(name string) float64 {
		mfs, err := reg.Gather()
		if err != nil {
			t.Fatal(err)
		}
		sum := 0.0
		for _, mf := range mfs {
			if mf.GetName() == name {
				for _, m := range mf.GetMetric() {
					sum += m.GetCounter().GetValue()
				}
			}
		}
		return sum
	}
}

type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(code int) {
	w.status = code
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// TestIngestRetriesWhenTheExporterIsBusy is issue 27's case: 50 pipelines
// at once against the real endpoint serving 4. The 46 refused with 429
// (and Retry-After) are sent again, whole, after the wait, and every run
// is counted exactly once: 50 runs, 50 times one run's tokens. (Before,
// 46 exited 1 and 4 runs were counted.) The wait is the client's, cut to
// a hundredth, after the four first runs end.
func TestIngestRetriesWhenTheExporterIsBusy(t *testing.T) {
	const runs, slots = 50, 4
	var refused atomic.Int64
	allRefused := make(chan struct{})
	var once sync.Once
	url, counted := ingestEndpoint(t, slots, func(status int) {
		if status == http.StatusTooManyRequests && refused.Add(1) == runs-slots {
			once.Do(func() { close(allRefused) })
		}
	})
	// What one run counts on its own.
	oneURL, oneCounted := ingestEndpoint(t, 1, func(int) {})
	head, tail := ingestRun("T-one")
	if code := runIngest(ingestOptions{url: oneURL, maxAttempts: 1}, strings.NewReader(head+tail), io.Discard, io.Discard); code != 0 {
		t.Fatalf("one run: exit %d", code)
	}
	oneTokens := oneCounted("amp_tokens_total")

	release := make(chan struct{})
	go func() {
		// Every pipeline but the four served has been refused once: the
		// four runs end.
		<-allRefused
		close(release)
	}()
	sleep := func(ctx context.Context, d time.Duration) error {
		<-release
		time.Sleep(d / 100)
		return nil
	}
	codes := make([]int, runs)
	stderrs := make([]bytes.Buffer, runs)
	outs := make([]bytes.Buffer, runs)
	var wg sync.WaitGroup
	for i := range runs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			head, tail := ingestRun(fmt.Sprintf("T-%d", i))
			in := &pausedStdin{head: strings.NewReader(head), tail: strings.NewReader(tail), release: release}
			codes[i] = runIngest(ingestOptions{url: url, maxAttempts: defaultIngestAttempts, maxWait: defaultIngestMaxWait, sleep: sleep},
				in, &outs[i], &stderrs[i])
			if outs[i].String() != head+tail {
				t.Errorf("pipeline %d: stdout is not stdin", i)
			}
		}()
	}
	wg.Wait()
	ok := 0
	for i, c := range codes {
		if c == 0 {
			ok++
		} else {
			t.Errorf("pipeline %d: exit %d: %s", i, c, stderrs[i].String())
		}
	}
	if got := counted("amp_executions_total"); got != runs {
		t.Errorf("%d pipelines succeeded; %v runs counted, want %d", ok, got, runs)
	}
	if got := counted("amp_tokens_total"); got != runs*oneTokens {
		t.Errorf("%v tokens counted, want %d runs of %v", got, runs, oneTokens)
	}
	if refused.Load() < runs-slots {
		t.Errorf("only %d requests were refused: the test did not fill the slots", refused.Load())
	}
}

// TestIngestRetriesAreBounded: an exporter that always answers 429 gets
// --retry.max-attempts requests, each wait capped by --retry.max-wait, and
// the pipeline exits 1 saying so; stdin still reaches stdout.
func TestIngestRetriesAreBounded(t *testing.T) {
	var requests atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		w.Header().Set("Retry-After", "3600")
		http.Error(w, "busy", http.StatusTooManyRequests)
	}))
	defer srv.Close()
	var waits []time.Duration
	sleep := func(ctx context.Context, d time.Duration) error {
		waits = append(waits, d)
		return nil
	}
	head, tail := ingestRun("T-1")
	var stdout, stderr bytes.Buffer
	code := runIngest(ingestOptions{url: srv.URL, maxAttempts: 3, maxWait: 2 * time.Second, sleep: sleep},
		strings.NewReader(head+tail), &stdout, &stderr)
	if code != 1 || requests.Load() != 3 || len(waits) != 2 {
		t.Fatalf("exit %d after %d requests and %d waits; stderr: %s", code, requests.Load(), len(waits), stderr.String())
	}
	for _, w := range waits {
		if w < 2*time.Second || w > 3*time.Second {
			t.Errorf("waited %s: Retry-After 3600 s capped at 2 s, plus up to half", w)
		}
	}
	if !strings.Contains(stderr.String(), "after 3 attempts (--retry.max-attempts)") {
		t.Errorf("stderr: %s", stderr.String())
	}
	if stdout.String() != head+tail {
		t.Errorf("stdout is not stdin")
	}
}
