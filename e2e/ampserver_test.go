//go:build e2e

package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/amp-exporter/amp-exporter/internal/testsupport/ampservertest"
	"github.com/amp-exporter/amp-exporter/internal/testsupport/threadgen"
	"github.com/amp-exporter/amp-exporter/parser/thread"
)

const standinKey = "sgamp_user_e2e_5f1d2c9a7b3e4f60"

// serverExpect sums what the stand-in's threads hold, read as files would
// be.
func serverExpect(t *testing.T, srv *ampservertest.Server) (messages, output float64) {
	t.Helper()
	p := thread.NewParser()
	for _, id := range srv.IDs() {
		th, err := p.ParseBytes(srv.Document(id))
		if err != nil {
			t.Fatal(err)
		}
		s := thread.Summarize(th)
		messages += float64(s.UserMessages + s.AssistantMessages)
		for _, tok := range s.Tokens {
			output += float64(tok.Output)
		}
	}
	return messages, output
}

// serverCounts is what the account's threads on the stand-in hold, read
// as files would be: tokens per model and type ("model/type"), prompts and
// tool calls. skip lists threads not counted (another user's).
func serverCounts(t *testing.T, srv *ampservertest.Server, skip map[string]bool) (tokens map[string]float64, prompts, tools float64) {
	t.Helper()
	tokens = map[string]float64{}
	p := thread.NewParser()
	for _, id := range srv.IDs() {
		if skip[id] {
			continue
		}
		th, err := p.ParseBytes(srv.Document(id))
		if err != nil {
			t.Fatal(err)
		}
		s := thread.Summarize(th)
		prompts += float64(s.Prompts)
		for model, tok := range s.Tokens {
			tokens[model+"/input"] += float64(tok.Input)
			tokens[model+"/output"] += float64(tok.Output)
			tokens[model+"/cache_read"] += float64(tok.CacheRead)
			tokens[model+"/cache_creation"] += float64(tok.CacheCreation)
		}
		for _, byStatus := range s.ToolCalls {
			for _, n := range byStatus {
				tools += float64(n)
			}
		}
	}
	return tokens, prompts, tools
}

// TestAmpServerSource runs the binary with no config but the Amp CLI's
// login (secrets.json under XDG_DATA_HOME, AMP_URL at the stand-in): the
// source turns itself on, names the account, counts the threads with
// source="server", fetches only what changed, and after a restart with
// --storage.path fetches nothing. A real Prometheus reads the result. The
// key appears nowhere: not in logs, /config or the state files.
func TestAmpServerSource(t *testing.T) {
	srv := ampservertest.New(standinKey, "dev@example.com")
	defer srv.Close()
	g := threadgen.New(threadgen.Options{Threads: 30, TotalBytes: 3_000_000, Seed: 5})
	if err := srv.PutGenerated(g, 0, 30); err != nil {
		t.Fatal(err)
	}
	srv.SetCost(srv.IDs()[0], map[string]any{
		"title": "x", "totalCostUSD": 1.5,
		"costBreakdown": map[string]any{"freeUSD": 0.5, "paidUSD": 1.0, "subscriptionUSD": 0},
		"entitlement":   map[string]any{"limitUSD": 20.0, "remainingUSD": 4.0, "percentUsed": 80.0, "windowPeriod": "daily", "windowResetsInSeconds": 3600},
	})
	srv.SetCost(srv.IDs()[1], map[string]any{"title": "y", "totalCostUSD": 0.25})
	// A thread of another user of the workspace, shared with the account:
	// not counted. And a document whose data carries a messages key of
	// its own: the pages' messages replace it.
	other := srv.IDs()[2]
	srv.SetCreator(other, "user-2")
	srv.SetCost(other, map[string]any{"title": "z", "totalCostUSD": 100.0})
	srv.StaleMessagesInData(srv.IDs()[3])
	wantTokens, wantPrompts, wantTools := serverCounts(t, srv, map[string]bool{other: true})
	data := ampLogin(t, srv.URL)
	cfg := filepath.Join(t.TempDir(), "amp-exporter.yml")
	if err := os.WriteFile(cfg, []byte("amp_server:\n  sync_interval: 2s\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	storage := t.TempDir()
	opts := exporterOpts{
		args: []string{"--config.file=" + cfg, "--storage.path=" + storage},
		env:  []string{"XDG_DATA_HOME=" + data, "AMP_URL=" + srv.URL},
	}
	wantMessages, wantOutput := serverExpectWithout(t, srv, other)
	if wantMessages == 0 || wantOutput == 0 {
		t.Fatal("the corpus has nothing to count")
	}
	synced := func(messages float64) func(map[string]*dto.MetricFamily) (bool, string) {
		return func(mfs map[string]*dto.MetricFamily) (bool, string) {
			up, _ := value(mfs, "amp_server_up", nil)
			got, _ := value(mfs, "amp_messages_total", map[string]string{"source": "server"})
			return up == 1 && got == messages, fmt.Sprintf("up %v, messages %v of %v", up, got, messages)
		}
	}

	e := startExporter(t, opts)
	e.waitFor(t, 30*time.Second, "first sync", synced(wantMessages))
	mfs := e.metrics(t)
	if got, _ := value(mfs, "amp_tokens_total", map[string]string{"source": "server", "token_type": "output"}); got != wantOutput {
		t.Errorf("output tokens %v, want %v", got, wantOutput)
	}
	if got := mustValue(t, mfs, "amp_billed_cost_usd_total", map[string]string{"kind": "paid"}); got != 1 {
		t.Errorf("billed paid %v", got)
	}
	if got, _ := value(mfs, "amp_billed_cost_usd_total", map[string]string{"source": "server"}); got != 1.75 {
		t.Errorf("billed in all %v, want the 1.75 the stand-in billed the account's threads", got)
	}
	for key, want := range wantTokens {
		model, typ, _ := strings.Cut(key, "/")
		if got, _ := value(mfs, "amp_tokens_total", map[string]string{"source": "server", "model": model, "token_type": typ}); got != want {
			t.Errorf("tokens %s: %v, want %v", key, got, want)
		}
	}
	if got, _ := value(mfs, "amp_prompts_total", map[string]string{"source": "server"}); got != wantPrompts || wantPrompts == 0 {
		t.Errorf("prompts %v, want %v", got, wantPrompts)
	}
	if got, _ := value(mfs, "amp_tool_calls_total", map[string]string{"source": "server"}); got != wantTools || wantTools == 0 {
		t.Errorf("tool calls %v, want %v", got, wantTools)
	}
	if got := mustValue(t, mfs, "amp_server_threads_skipped_total", map[string]string{"reason": "other_user"}); got != 1 {
		t.Errorf("skipped %v, want the other user's thread", got)
	}
	if gz, _ := value(mfs, "amp_server_response_bytes_total", map[string]string{"encoding": "gzip"}); gz == 0 ||
		gz >= mustValue(t, mfs, "amp_server_response_bytes_total", map[string]string{"encoding": "decoded"}) {
		t.Errorf("response bytes: gzip %v, want compressed answers", gz)
	}
	if got := mustValue(t, mfs, "amp_entitlement_used_ratio", map[string]string{"window": "daily"}); got != 0.8 {
		t.Errorf("entitlement used %v", got)
	}
	if n, _ := value(mfs, "amp_threads", nil); n != 29 {
		t.Errorf("amp_threads %v", n)
	}
	if !strings.Contains(e.output.String(), "dev@example.com") {
		t.Errorf("no log line names the account:\n%s", e.output.String())
	}

	// One thread changes: only it is fetched.
	srv.Reset()
	id := srv.IDs()[5]
	doc := srv.Document(id)
	var parsed struct {
		Messages []json.RawMessage `json:"messages"`
	}
	if err := json.Unmarshal(doc, &parsed); err != nil || len(parsed.Messages) == 0 {
		t.Fatal(err)
	}
	srv.AppendMessage(id, asNewMessage(parsed.Messages[len(parsed.Messages)-1], len(parsed.Messages)), time.Now().UnixMilli())
	wantMessages, _ = serverExpectWithout(t, srv, other)
	e.waitFor(t, 30*time.Second, "incremental sync", synced(wantMessages))
	if f := srv.Fetched(); len(f) != 1 || f[id] != 1 {
		t.Errorf("fetched %v, want only the changed thread", f)
	}

	p := startPrometheus(t, strings.TrimPrefix(e.base, "http://"))
	deadline := time.Now().Add(30 * time.Second)
	for {
		got, err := p.query(`sum(amp_messages_total{job="amp",source="server"})`, "")
		if err == nil && got[""] == wantMessages {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("Prometheus: %v %v, want %v", got, err, wantMessages)
		}
		time.Sleep(200 * time.Millisecond)
	}

	// Restart with the saved state: nothing unchanged is fetched.
	if err := e.stop(); err != nil {
		t.Fatal(err)
	}
	srv.Reset()
	e2 := startExporter(t, opts)
	e2.waitFor(t, 30*time.Second, "sync after restart", synced(wantMessages))
	if r := srv.Requests(); r["getThreadTail"] != 0 {
		t.Errorf("restart fetched threads: %v", r)
	}

	// The key is nowhere.
	_, conf, err := e2.get("/config")
	if err != nil {
		t.Fatal(err)
	}
	states, _ := filepath.Glob(filepath.Join(storage, "*"))
	for name, text := range map[string]string{"log": e.output.String() + e2.output.String(), "/config": conf} {
		if strings.Contains(text, standinKey) {
			t.Errorf("the key appears in the %s", name)
		}
	}
	for _, s := range states {
		b, _ := os.ReadFile(s)
		if strings.Contains(string(b), standinKey) {
			t.Errorf("the key appears in %s", s)
		}
	}
}

// serverExpectWithout is serverExpect without one thread (another
// user's).
func serverExpectWithout(t *testing.T, srv *ampservertest.Server, skip string) (messages, output float64) {
	t.Helper()
	allM, allO := serverExpect(t, srv)
	p := thread.NewParser()
	th, err := p.ParseBytes(srv.Document(skip))
	if err != nil {
		t.Fatal(err)
	}
	s := thread.Summarize(th)
	var out float64
	for _, tok := range s.Tokens {
		out += float64(tok.Output)
	}
	return allM - float64(s.UserMessages+s.AssistantMessages), allO - out
}

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// newAmpServerStandIn serves a few generated threads, one of them billed
// with an entitlement window, for tests that need the server source busy.
func newAmpServerStandIn(t *testing.T) *ampservertest.Server {
	t.Helper()
	srv := ampservertest.New(standinKey, "dev@example.com")
	t.Cleanup(srv.Close)
	if err := srv.PutGenerated(threadgen.New(threadgen.Options{Threads: 5, TotalBytes: 200_000, Seed: 9}), 0, 5); err != nil {
		t.Fatal(err)
	}
	bumpAmpServer(srv, 0)
	return srv
}

// bumpAmpServer changes the newest thread (a new message, a higher bill),
// as using Amp does.
func bumpAmpServer(srv *ampservertest.Server, i int) {
	id := srv.IDs()[0]
	var doc struct {
		Messages []json.RawMessage `json:"messages"`
	}
	if json.Unmarshal(srv.Document(id), &doc) == nil && len(doc.Messages) > 0 && i > 0 {
		srv.AppendMessage(id, asNewMessage(doc.Messages[len(doc.Messages)-1], len(doc.Messages)), time.Now().UnixMilli())
	}
	srv.SetCost(id, map[string]any{
		"title": "busy", "totalCostUSD": 0.1 * float64(i+1),
		"costBreakdown": map[string]any{"paidUSD": 0.1 * float64(i+1)},
		"entitlement":   map[string]any{"limitUSD": 50.0, "remainingUSD": 10.0, "percentUsed": 80.0, "windowPeriod": "daily", "windowResetsInSeconds": 7200},
	})
}

// fixtureSession is the session_id of the stream-json captures in
// parser/streamjson/testdata, which is also a thread of
// parser/thread/testdata.
const fixtureSession = "T-019c4811-2a5e-7c3d-8e21-5b6f0a9d4c11"
