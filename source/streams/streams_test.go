package streams

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/amp-exporter/amp-exporter/collector"
	ampstore "github.com/amp-exporter/amp-exporter/store"
)

type fakeMetrics struct {
	mu     sync.Mutex
	errors map[string]int
}

func (m *fakeMetrics) ParseFailed(_, reason string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.errors[reason]++
}

func (m *fakeMetrics) count(reason string) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.errors[reason]
}

type env struct {
	t       *testing.T
	store   *ampstore.StreamStore
	reg     *prometheus.Registry
	metrics *fakeMetrics
}

func newEnv(t *testing.T, store *ampstore.StreamStore) *env {
	if store == nil {
		store = ampstore.NewStreamStore(ampstore.NewLabelCap(100, nil), nil)
	}
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(collector.NewAmpCollector(ampstore.NewThreadStore(ampstore.StoreOptions{}), store))
	return &env{t: t, store: store, reg: reg, metrics: &fakeMetrics{errors: map[string]int{}}}
}

// value sums the samples of a metric whose labels include the given ones.
func (e *env) value(name string, labels ...string) float64 {
	e.t.Helper()
	mfs, err := e.reg.Gather()
	if err != nil {
		e.t.Fatal(err)
	}
	sum := 0.0
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
			for i := 0; i+1 < len(labels); i += 2 {
				if have[labels[i]] != labels[i+1] {
					continue metrics
				}
			}
			sum += sampleValue(m)
		}
	}
	return sum
}

func sampleValue(m *dto.Metric) float64 {
	switch {
	case m.Counter != nil:
		return m.Counter.GetValue()
	case m.Histogram != nil:
		return float64(m.Histogram.GetSampleCount())
	}
	return m.GetGauge().GetValue()
}

func (e *env) outputTokens() float64 {
	return e.value("amp_tokens_total", "source", "stream", "token_type", "output")
}

// Lines of one run in the CLI's shape: init, prompt, an assistant line with
// a Bash call and 100 output tokens, its result, a final answer with 50,
// and the result line.
var runLines = []string{
	`{"type":"system","subtype":"init","cwd":"/w","session_id":"T-1","tools":["Bash"],"mcp_servers":[]}`,
	`{"type":"user","message":{"role":"user","content":[{"type":"text","text":"go"}]},"parent_tool_use_id":null,"session_id":"T-1"}`,
	`{"type":"assistant","message":{"type":"message","role":"assistant","content":[{"type":"tool_use","id":"toolu_1","name":"Bash","input":{"cmd":"ls"}}],"stop_reason":"tool_use","usage":{"input_tokens":10,"cache_read_input_tokens":500,"output_tokens":100,"max_tokens":168000,"service_tier":"standard"}},"parent_tool_use_id":null,"session_id":"T-1"}`,
	`{"type":"user","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":"a\nb","is_error":false}]},"parent_tool_use_id":null,"session_id":"T-1"}`,
	`{"type":"assistant","message":{"type":"message","role":"assistant","content":[{"type":"text","text":"done"}],"stop_reason":"end_turn","usage":{"input_tokens":5,"output_tokens":50,"max_tokens":168000}},"parent_tool_use_id":null,"session_id":"T-1"}`,
	`{"type":"result","subtype":"success","duration_ms":12500,"is_error":false,"num_turns":2,"result":"done","session_id":"T-1"}`,
}

func runText(lines ...string) string { return strings.Join(lines, "\n") + "\n" }

// runOf is runLines as a run of another thread.
func runOf(session string) []string {
	out := make([]string, len(runLines))
	for i, l := range runLines {
		out[i] = strings.ReplaceAll(l, `"T-1"`, `"`+session+`"`)
	}
	return out
}

// continuedRun is the n-th later run of runLines' thread (amp threads
// continue): the same session_id, its first answer reading a longer
// context.
func continuedRun(n int) []string {
	out := append([]string(nil), runLines...)
	out[2] = strings.Replace(out[2], `"input_tokens":10,`, fmt.Sprintf(`"input_tokens":%d,`, 10+1000*n), 1)
	return out
}

func (e *env) tailer(dir string) *Tailer {
	return NewTailer(TailConfig{Dirs: []string{dir}, PollInterval: time.Hour, MaxLineBytes: 1 << 20}, e.store, e.metrics, nil, nil)
}

func appendFile(t *testing.T, path, s string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString(s); err != nil {
		t.Fatal(err)
	}
	f.Close()
}

func TestTailLineCutAcrossWrites(t *testing.T) {
	dir := t.TempDir()
	e := newEnv(t, nil)
	tl := e.tailer(dir)
	path := filepath.Join(dir, "run.jsonl")
	third := runLines[2]
	appendFile(t, path, runText(runLines[:2]...)+third[:40])
	tl.Poll()
	if got := e.outputTokens(); got != 0 {
		t.Fatalf("a partial line was counted: %v", got)
	}
	appendFile(t, path, third[40:]+"\n"+runText(runLines[3:]...))
	tl.Poll()
	tl.Poll() // nothing new: nothing more
	if got := e.outputTokens(); got != 150 {
		t.Fatalf("output tokens %v, want 150", got)
	}
	checks := map[string]float64{
		"success":    e.value("amp_executions_total", "outcome", "success"),
		"bash done":  e.value("amp_tool_calls_total", "source", "stream", "tool", "Bash", "status", "done"),
		"prompts":    e.value("amp_prompts_total", "source", "stream"),
		"assistants": e.value("amp_messages_total", "source", "stream", "role", "assistant"),
		"turns":      e.value("amp_execution_turns"),
		"durations":  e.value("amp_execution_duration_seconds", "outcome", "success"),
		"cache_read": e.value("amp_tokens_total", "source", "stream", "token_type", "cache_read"),
	}
	want := map[string]float64{"success": 1, "bash done": 1, "prompts": 1, "assistants": 2, "turns": 1, "durations": 1, "cache_read": 500}
	for k, v := range want {
		if checks[k] != v {
			t.Errorf("%s = %v, want %v", k, checks[k], v)
		}
	}
}

// Counting rule 18 (docs/counting.md): a truncated or replaced capture is
// read again from its start.
func TestTailTruncationAndReplacement(t *testing.T) {
	dir := t.TempDir()
	e := newEnv(t, nil)
	tl := e.tailer(dir)
	path := filepath.Join(dir, "run.jsonl")
	appendFile(t, path, runText(runLines[:3]...)) // a run left open
	tl.Poll()
	if err := os.Truncate(path, 0); err != nil {
		t.Fatal(err)
	}
	// Written again before the next poll, longer than before and with
	// another start: the truncation shows only in the file's head.
	appendFile(t, path, runText(strings.Replace(runLines[0], `"/w"`, `"/other"`, 1))+runText(runLines[1:]...))
	tl.Poll()
	if got := e.outputTokens(); got != 250 {
		t.Fatalf("after truncation: output %v, want 100 + 150", got)
	}
	if got := e.value("amp_executions_total", "outcome", "incomplete"); got != 1 {
		t.Fatalf("the run cut by the truncation: incomplete = %v, want 1", got)
	}
	// Replaced by rename: a new file, read from the start.
	tmp := filepath.Join(dir, "tmp")
	if err := os.WriteFile(tmp, []byte(runText(runOf("T-2")...)), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
	tl.Poll()
	if got := e.outputTokens(); got != 400 {
		t.Fatalf("after replacement: output %v, want 400", got)
	}
	// A removed capture stays counted.
	os.Remove(path)
	tl.Poll()
	if got := e.outputTokens(); got != 400 || len(e.store.Files()) != 0 {
		t.Fatalf("after removal: output %v, files %v", got, e.store.Files())
	}
}

// Counting rule 18 (docs/counting.md): read offsets survive a restart.
func TestTailRestartWithStateCountsNothingTwice(t *testing.T) {
	dir := t.TempDir()
	e := newEnv(t, nil)
	path := filepath.Join(dir, "run.jsonl")
	// The run is half done at the restart: its tool call's name must
	// survive it.
	appendFile(t, path, runText(runLines[:3]...))
	e.tailer(dir).Poll()
	data, err := json.Marshal(e.store.Export())
	if err != nil {
		t.Fatal(err)
	}
	var st ampstore.StreamState
	if err := json.Unmarshal(data, &st); err != nil {
		t.Fatal(err)
	}
	restored := ampstore.NewStreamStore(ampstore.NewLabelCap(100, nil), nil)
	if err := restored.Import(&st); err != nil {
		t.Fatal(err)
	}
	e2 := newEnv(t, restored)
	tl := e2.tailer(dir)
	tl.Poll()
	if got := e2.outputTokens(); got != 100 {
		t.Fatalf("after restart: output %v, want 100", got)
	}
	appendFile(t, path, runText(runLines[3:]...))
	tl.Poll()
	if got := e2.outputTokens(); got != 150 {
		t.Fatalf("output %v, want 150", got)
	}
	if got := e2.value("amp_tool_calls_total", "source", "stream", "tool", "Bash"); got != 1 {
		t.Fatalf("the tool call begun before the restart: Bash = %v, want 1", got)
	}
}

func TestTailBadLinesAreCountedAndSkipped(t *testing.T) {
	dir := t.TempDir()
	e := newEnv(t, nil)
	tl := NewTailer(TailConfig{Dirs: []string{dir}, PollInterval: time.Hour, MaxLineBytes: 1024}, e.store, e.metrics, nil, nil)
	path := filepath.Join(dir, "run.jsonl")
	appendFile(t, path, runText(runLines[0], "garbage", "", `{"type":"user","message":{"content":"`+strings.Repeat("x", 2000)+`"}}`, runLines[1], runLines[2], "[1,2]")+
		strings.ReplaceAll(runText(runLines[3:]...), "\n", "\r\n"))
	tl.Poll()
	if got := e.outputTokens(); got != 150 {
		t.Fatalf("output %v, want 150", got)
	}
	if e.metrics.count("invalid_json") != 1 || e.metrics.count("line_too_long") != 1 || e.metrics.count("not_an_object") != 1 {
		t.Fatalf("errors %v", e.metrics.errors)
	}
	if got := e.value("amp_executions_total", "outcome", "success"); got != 1 {
		t.Fatalf("success = %v", got)
	}
}

func ingestServer(e *env, cfg IngestConfig) *httptest.Server {
	return httptest.NewServer(NewIngestHandler(func() IngestConfig { return cfg }, e.store, e.metrics, nil))
}

func post(t *testing.T, url string, body io.Reader) (int, IngestResult) {
	t.Helper()
	resp, err := http.Post(url, "application/x-ndjson", body)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var res IngestResult
	if err := json.NewDecoder(resp.Body).Decode(&res); err != nil {
		t.Fatalf("status %d, undecodable answer: %v", resp.StatusCode, err)
	}
	return resp.StatusCode, res
}

func TestIngestStreamsAChunkedBody(t *testing.T) {
	e := newEnv(t, nil)
	srv := ingestServer(e, IngestConfig{MaxLineBytes: 1 << 20, MaxBodyBytes: 1 << 30})
	defer srv.Close()
	pr, pw := io.Pipe()
	type answer struct {
		code int
		res  IngestResult
	}
	done := make(chan answer, 1)
	go func() {
		code, res := post(t, srv.URL, pr) // no length: sent chunked
		done <- answer{code, res}
	}()
	// The first half of the run, in pieces that cut lines: counted while
	// the request is still open.
	text := runText(runLines[:3]...)
	for i := 0; i < len(text); i += 37 {
		if _, err := pw.Write([]byte(text[i:min(i+37, len(text))])); err != nil {
			t.Fatal(err)
		}
	}
	deadline := time.Now().Add(10 * time.Second)
	for e.outputTokens() != 100 {
		if time.Now().After(deadline) {
			t.Fatalf("lines not counted while the body streams: output %v", e.outputTokens())
		}
		time.Sleep(5 * time.Millisecond)
	}
	if _, err := pw.Write([]byte(runText(runLines[3:]...))); err != nil {
		t.Fatal(err)
	}
	pw.Close()
	a := <-done
	if a.code != http.StatusOK || a.res.Counted != 6 || a.res.RunsFinished != 1 || a.res.Lines != 6 {
		t.Fatalf("answer %d %+v", a.code, a.res)
	}
	if got := e.outputTokens(); got != 150 {
		t.Fatalf("output %v, want 150", got)
	}
}

func TestIngestBadInput(t *testing.T) {
	t.Parallel() // waits out read timeouts: alongside the other waiter
	e := newEnv(t, nil)
	srv := ingestServer(e, IngestConfig{MaxLineBytes: 1024, MaxBodyBytes: 4096})
	defer srv.Close()

	code, res := post(t, srv.URL, strings.NewReader(runText(runLines[0], runLines[1], "not json at all", runLines[2])))
	if code != http.StatusBadRequest || res.Invalid != 1 || res.Counted != 3 || !strings.Contains(res.Error, "line 3") {
		t.Fatalf("garbage line: %d %+v", code, res)
	}
	if res.RunsIncomplete != 1 {
		t.Fatalf("a body that ends without a result is an incomplete run: %+v", res)
	}
	code, res = post(t, srv.URL, strings.NewReader(runText(runLines[0], strings.Repeat("y", 2000), runLines[1])))
	if code != http.StatusRequestEntityTooLarge || res.TooLong != 1 || res.Counted != 2 || !strings.Contains(res.Error, "max_line_bytes") {
		t.Fatalf("long line: %d %+v", code, res)
	}
	code, res = post(t, srv.URL, strings.NewReader(strings.Repeat(runLines[1]+"\n", 40)))
	if code != http.StatusRequestEntityTooLarge || !strings.Contains(res.Error, "max_body_bytes") || res.Counted == 0 {
		t.Fatalf("big body: %d %+v", code, res)
	}
	resp, err := http.Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed {
		t.Fatalf("GET: %d", resp.StatusCode)
	}
	if e.metrics.count("invalid_json") != 1 || e.metrics.count("line_too_long") != 1 {
		t.Fatalf("errors %v", e.metrics.errors)
	}
	if got := e.value("amp_executions_total", "outcome", "incomplete"); got != 3 {
		t.Fatalf("incomplete = %v, want 3 (one per body without a result)", got)
	}
}

func TestIngestedAndTailedRunsAddUp(t *testing.T) {
	dir := t.TempDir()
	e := newEnv(t, nil)
	appendFile(t, filepath.Join(dir, "a.jsonl"), runText(runLines...))
	e.tailer(dir).Poll()
	srv := ingestServer(e, IngestConfig{MaxLineBytes: 1 << 20, MaxBodyBytes: 1 << 20})
	defer srv.Close()
	var body bytes.Buffer
	for i := 1; i <= 3; i++ { // later runs of the same thread
		body.WriteString(runText(continuedRun(i)...))
	}
	if code, res := post(t, srv.URL, &body); code != 200 || res.RunsFinished != 3 {
		t.Fatalf("%d %+v", code, res)
	}
	if got := e.value("amp_executions_total", "outcome", "success"); got != 4 {
		t.Fatalf("success = %v, want 4", got)
	}
	if got := e.outputTokens(); got != 600 {
		t.Fatalf("output = %v, want 600", got)
	}
	if got := e.value("amp_execution_duration_seconds", "outcome", "success"); got != 4 {
		t.Fatal(fmt.Sprint("durations observed: ", got))
	}
}
