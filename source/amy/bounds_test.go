package amy

import (
	"io"
	"net/http"
	"strings"
	"testing"
)

// TestOversizedEventDoesNotStallTheTurn: an event over the size limit
// failed at the same offset on every reconnect and stalled its turn until
// turn_timeout. It is skipped, counted, and the turn goes on.
func TestOversizedEventDoesNotStallTheTurn(t *testing.T) {
	e := newEnv(t, envOpts{fake: true, auto: true})
	events := recording(t)
	var big int
	for i, ev := range events {
		if ev.Event == "synthesis_delta" {
			events[i].Data = `{"text":"` + strings.Repeat("x", 2<<20) + `"}` // one 2 MiB line
			big = i
			break
		}
	}
	e.amy.addTurn("turn_big", events, connPlan{})
	e.follow("turn_big")
	e.waitMetric(t, `amy_turns_finished_total{outcome="completed"}`, 1)
	waitStopped(t, e.client)
	m := metrics(t, e.reg)
	if got := m[`amy_stream_refused_events_total{reason="event_too_large"}`]; got != 1 {
		t.Errorf("event_too_large refused %v times, want 1", got)
	}
	if got, want := m[`amy_events_total{event="synthesis_delta"}`], recordedCounts(1)[`amy_events_total{event="synthesis_delta"}`]-1; got != want {
		t.Errorf("synthesis_delta counted %v, want %v (all but the skipped one)", got, want)
	}
	if n := e.amy.count("turn_big"); n != 1 {
		t.Errorf("%d connections for one stream, want 1", n)
	}
	// The skipped event's id is remembered: a resume goes on after it.
	if r := e.store.ResumeID(upName, "turn_big"); r != events[len(events)-1].ID {
		t.Errorf("resume id %q after the turn, want %q (event %d was skipped)", r, events[len(events)-1].ID, big)
	}
}

// TestProxiedResumeThenFullReadCountsEveryEvent: a client resumes through
// the proxy with Last-Event-Id: 20, then another reads the whole turn: every
// event counts once (turn.started was lost on the high-water mark).
func TestProxiedResumeThenFullReadCountsEveryEvent(t *testing.T) {
	e, px := newProxyEnv(t)
	e.amy.addTurn("turn_r", recording(t), connPlan{})
	if r := callResume(t, e, px.URL+"/v1/turns/turn_r/events", "20"); r.status != 200 {
		t.Fatalf("resumed read: %d", r.status)
	}
	e.waitMetric(t, `amy_turns_finished_total{outcome="completed"}`, 1)
	if r := callResume(t, e, px.URL+"/v1/turns/turn_r/events", ""); r.status != 200 {
		t.Fatalf("full read: %d", r.status)
	}
	e.waitMetric(t, `amy_turns_started_total`, 1)
	want := recordedCounts(1)
	e.waitMetric(t, `amy_events_total{event="turn.started"}`, 1)
	waitFor(t, "every event counted", func() (float64, bool) {
		m := metrics(t, e.reg)
		return m[`amy_stream_duplicate_events_total`], m[`amy_stream_duplicate_events_total`] == 10
	})
	m := metrics(t, e.reg)
	// The turn's duration needs both ends from one reader's clock order;
	// everything else counts exactly as one full read.
	for k := range want {
		if strings.HasPrefix(k, "amy_turn_duration") || k == "amy_time_to_first_token_seconds_count" {
			delete(want, k)
		}
	}
	checkMetrics(t, m, want)
}

// callResume reads a turn's stream through the proxy from after lastID.
func callResume(t *testing.T, e *env, url, lastID string) reply {
	t.Helper()
	req, err := http.NewRequestWithContext(e.ctx, http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+clientKey)
	req.Header.Set("Last-Event-ID", lastID)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return reply{status: resp.StatusCode, header: resp.Header, body: b}
}

// TestCreatedTurnIDIsBounded: a POST /v1/turns answer naming a huge turn id
// is not followed (its events would all be refused).
func TestCreatedTurnIDIsBounded(t *testing.T) {
	if id := turnID([]byte(`{"id":"turn_ok"}`)); id != "turn_ok" {
		t.Fatalf("turnID: %q", id)
	}
	if id := turnID([]byte(`{"id":"` + strings.Repeat("t", 300) + `"}`)); id != "" {
		t.Fatalf("a 300-byte turn id was accepted")
	}
}
