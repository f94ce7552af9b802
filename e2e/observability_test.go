//go:build e2e

package e2e

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
)

// amyTurn renders one completed Amy turn as an SSE stream, ids from 1.
func amyTurn(turn string, costUSD float64) []string {
	events := []struct{ name, data string }{
		{"turn.started", fmt.Sprintf(`{"turn_id":%q,"at":"2026-11-29T10:00:00Z"}`, turn)},
		{"phase", `{"agent":"orchestrator","phase":"classifying query vagueness"}`},
		{"routing", `{"decision":{"main_agent":"Data Science Agent","supporting_agents":["Domain Expert Agent"]}}`},
		{"agent_start", `{"agent":"Data Science Agent","question":"q"}`},
		{"agent_end", `{"agent":"Data Science Agent","cost_usd":0.0895,"duration_ms":64200}`},
		{"validation_start", `{"finding_id":"ds-001","claim":"c"}`},
		{"validation_end", `{"finding_id":"ds-001","verdict":"validated","gates_passed":4,"gates_total":4,"reason":"ok"}`},
		{"validation_end", `{"finding_id":"ds-002","verdict":"rejected","gates_passed":1,"gates_total":4,"reason":"no"}`},
		{"synthesis_delta", `{"text":"Short answer: "}`},
		{"synthesis_delta", `{"text":"no."}`},
		{"synthesis_done", `{}`},
		{"fact_check", `{"issues":[{"n":1}]}`},
		{"memory", `{"entries":[{"k":1},{"k":2}]}`},
		{"cost_warning", `{"cumulative_usd":0.12}`},
		{"turn.completed", fmt.Sprintf(`{"turn_id":%q,"at":"2026-11-29T10:03:42Z","result":{"answer":"no","cost_usd":%v}}`, turn, costUSD)},
	}
	out := make([]string, len(events))
	for i, e := range events {
		out[i] = fmt.Sprintf("id: %d\nevent: %s\ndata: %s\n\n", i+1, e.name, e.data)
	}
	return out
}

// amyStandIn is a small Amy API: bearer auth, event streams replayed from
// Last-Event-ID, POST /v1/turns. It records the Authorization of each
// request.
type amyStandIn struct {
	key string

	mu    sync.Mutex
	turns map[string][]string
	auths []string
	// cutTurn's first connection is closed after cutAfter events (a
	// disconnect mid-turn).
	cutTurn  string
	cutAfter int
	conns    map[string]int
}

func newAmyStandIn(key string, turns ...string) *amyStandIn {
	a := &amyStandIn{key: key, turns: map[string][]string{}, conns: map[string]int{}}
	for _, t := range turns {
		a.turns[t] = amyTurn(t, 0.1288)
	}
	return a
}

var eventsRoute = regexp.MustCompile(`^/v1/turns/([^/]+)/events$`)

func (a *amyStandIn) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	a.mu.Lock()
	a.auths = append(a.auths, r.Header.Get("Authorization"))
	a.mu.Unlock()
	if r.Header.Get("Authorization") != "Bearer "+a.key {
		http.Error(w, `{"error":"unauthorized"}`, http.StatusUnauthorized)
		return
	}
	if r.Method == http.MethodPost && r.URL.Path == "/v1/turns" {
		a.mu.Lock()
		id := fmt.Sprintf("turn_created_%d", len(a.turns))
		a.turns[id] = amyTurn(id, 0.05)
		a.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		fmt.Fprintf(w, `{"id":%q,"status":"running"}`, id)
		return
	}
	m := eventsRoute.FindStringSubmatch(r.URL.Path)
	if m == nil || r.Method != http.MethodGet {
		http.NotFound(w, r)
		return
	}
	a.mu.Lock()
	events, ok := a.turns[m[1]]
	a.conns[m[1]]++
	first := a.conns[m[1]] == 1
	a.mu.Unlock()
	if !ok {
		http.NotFound(w, r)
		return
	}
	from := 0
	if last := r.Header.Get("Last-Event-ID"); last != "" {
		fmt.Sscan(last, &from)
		from = max(from-2, 0) // replay two already seen, as servers may
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("X-Stand-In", "amy")
	fl := w.(http.Flusher)
	io.WriteString(w, ": keepalive\n\n")
	for i := from; i < len(events); i++ {
		if first && m[1] == a.cutTurn && i == a.cutAfter {
			return // the connection drops mid-turn
		}
		io.WriteString(w, events[i])
		fl.Flush()
	}
}

// TestAmyFollowProxyAndKeyHygiene runs the binary against an Amy stand-in:
// a configured turn followed through a disconnect and an overlapping
// replay, a turn read by a client through the proxy, a turn created
// through the proxy and followed by the exporter with the client's
// Authorization — and checks each event counted once, and the key in no
// log line and not in /config.
func TestAmyFollowProxyAndKeyHygiene(t *testing.T) {
	const key = "sk-amy-e2e-9f8e7d6c5b4a"
	standIn := newAmyStandIn(key, "turn_followed", "turn_proxied")
	standIn.cutTurn, standIn.cutAfter = "turn_followed", 6
	srv := httptest.NewServer(standIn)
	defer srv.Close()

	dir := t.TempDir()
	keyFile := filepath.Join(dir, "amy.key")
	if err := os.WriteFile(keyFile, []byte(key+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	proxyPort := freePort(t)
	cfg := filepath.Join(dir, "amp-exporter.yml")
	os.WriteFile(cfg, []byte(fmt.Sprintf(`amy:
  - name: e2e
    base_url: %s
    api_key_file: %s
    turns: [turn_followed]
    proxy: {listen_address: "127.0.0.1:%d"}
`, srv.URL, keyFile, proxyPort)), 0o644)
	e := startExporter(t, exporterOpts{args: []string{"--config.file=" + cfg, "--log.level=debug", "--log.format=json"}})

	// A client reads a turn through the proxy; what it receives must be
	// exactly what the stand-in sends.
	proxy := fmt.Sprintf("http://127.0.0.1:%d", proxyPort)
	req, _ := http.NewRequest(http.MethodGet, proxy+"/v1/turns/turn_proxied/events", nil)
	req.Header.Set("Authorization", "Bearer "+key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	got, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	want := ": keepalive\n\n" + strings.Join(amyTurn("turn_proxied", 0.1288), "")
	if string(got) != want || resp.Header.Get("X-Stand-In") != "amy" {
		t.Fatalf("proxied stream differs from the stand-in's (%d vs %d bytes), header %q", len(got), len(want), resp.Header.Get("X-Stand-In"))
	}
	// A turn created through the proxy.
	req, _ = http.NewRequest(http.MethodPost, proxy+"/v1/turns", strings.NewReader(`{"messages":[{"role":"user","content":"hi"}]}`))
	req.Header.Set("Authorization", "Bearer "+key)
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	var created struct{ ID string }
	if resp.StatusCode != http.StatusCreated || json.Unmarshal(body, &created) != nil || created.ID == "" {
		t.Fatalf("POST /v1/turns through the proxy: %d %s", resp.StatusCode, body)
	}

	up := map[string]string{"upstream": "e2e"}
	e.waitFor(t, 20*time.Second, "three turns counted", func(mfs map[string]*dto.MetricFamily) (bool, string) {
		done, _ := value(mfs, "amy_turns_finished_total", map[string]string{"upstream": "e2e", "outcome": "completed"})
		return done == 3, fmt.Sprint("completed turns ", done)
	})
	mfs := e.metrics(t)
	per := float64(3) // every turn's events, counted once
	checks := []struct {
		name   string
		labels map[string]string
		want   float64
	}{
		{"amy_turns_started_total", up, 3},
		{"amy_turns_in_flight", up, 0},
		{"amy_events_total", map[string]string{"upstream": "e2e", "event": "validation_end"}, 2 * per},
		{"amy_events_total", map[string]string{"upstream": "e2e", "event": "synthesis_delta"}, 2 * per},
		{"amy_validations_total", map[string]string{"upstream": "e2e", "verdict": "rejected"}, per},
		{"amy_validation_gates_total", map[string]string{"upstream": "e2e", "result": "passed"}, 5 * per},
		{"amy_validation_gates_total", map[string]string{"upstream": "e2e", "result": "failed"}, 3 * per},
		{"amy_agent_runs_total", map[string]string{"upstream": "e2e", "agent": "Data Science Agent"}, per},
		{"amy_fact_check_issues_total", up, per},
		{"amy_memory_entries_total", up, 2 * per},
		{"amy_cost_warnings_total", up, per},
		{"amy_turn_duration_seconds", map[string]string{"upstream": "e2e", "outcome": "completed"}, 3},
	}
	for _, c := range checks {
		if got, _ := value(mfs, c.name, c.labels); got != c.want {
			t.Errorf("%s%v = %v, want %v", c.name, c.labels, got, c.want)
		}
	}
	if got, _ := value(mfs, "amy_cost_usd_total", up); fmt.Sprintf("%.4f", got) != "0.3076" { // 0.1288 × 2 + 0.05
		t.Errorf("amy_cost_usd_total = %v, want 0.3076", got)
	}
	// The disconnect after 6 events and the two-event overlap on resume.
	if got, _ := value(mfs, "amy_stream_duplicate_events_total", up); got < 2 {
		t.Errorf("duplicates dropped = %v, want at least the 2 replayed", got)
	}
	if got, _ := value(mfs, "amy_stream_reconnects_total", map[string]string{"upstream": "e2e", "reason": "eof"}); got < 1 {
		t.Errorf("reconnects after the cut = %v", got)
	}
	// The created turn was followed with the creating client's header.
	standIn.mu.Lock()
	for _, a := range standIn.auths {
		if a != "Bearer "+key {
			t.Errorf("a request reached the stand-in with Authorization %q", a)
		}
	}
	standIn.mu.Unlock()
	_, cfgPage, err := e.get("/config")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(cfgPage, key) {
		t.Error("/config shows the API key")
	}
	if err := e.stop(); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(e.output.String(), key) {
		t.Error("the API key appears in the exporter's log")
	}
}
