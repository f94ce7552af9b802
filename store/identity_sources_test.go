package store

import (
	"encoding/json"
	"testing"

	"github.com/amp-exporter/amp-exporter/parser/amyturn"
	"github.com/amp-exporter/amp-exporter/parser/streamjson"
)

// The stream-json and Amy sources count each thing when it arrives (a
// stream-json line is written once, final; an SSE event is keyed by its id
// within its turn), so nothing is ever re-attributed: a raised label cap, a
// restart with a higher cap, or a replay that carries other labels moves
// nothing. These tests hold them to that, beside the thread store's.

func TestStreamLabelsCountOnceAcrossCapChanges(t *testing.T) {
	labels := NewLabelCap(1, nil)
	s := NewStreamStore(labels, nil)
	line := func(model string) streamjson.Increments {
		return streamjson.Increments{AssistantMessages: 1, Model: model, StopReason: "end_turn",
			Tokens: &streamjson.Usage{Input: 10, Output: 100}}
	}
	s.Apply([]streamjson.Increments{line("m1"), line("m2")})
	want := s.Snapshot().totals
	if want[SeriesKey{FamTokens, "other", "output", ""}] != 100 {
		t.Fatalf("m2 not folded: %v", want)
	}
	labels.SetMax(10)
	assertSameTotals(t, "after a reload raised the cap", want, s.Snapshot().totals)
	data, err := json.Marshal(s.Export())
	if err != nil {
		t.Fatal(err)
	}
	var st StreamState
	if err := json.Unmarshal(data, &st); err != nil {
		t.Fatal(err)
	}
	restored := NewStreamStore(NewLabelCap(10, nil), nil)
	if err := restored.Import(&st); err != nil {
		t.Fatal(err)
	}
	assertSameTotals(t, "after a restart with a higher cap", want, restored.Snapshot().totals)
	// What arrives from now on is a new line, counted under its own label.
	restored.Apply([]streamjson.Increments{line("m2")})
	if got := restored.Snapshot().totals[SeriesKey{FamTokens, "m2", "output", ""}]; got != 100 {
		t.Errorf("a new m2 line: %d output tokens under m2, want 100", got)
	}
	if got := restored.Snapshot().totals[SeriesKey{FamTokens, "other", "output", ""}]; got != 100 {
		t.Errorf("other moved to %d", got)
	}
}

func TestAmyEventCountsOnceUnderItsFirstLabels(t *testing.T) {
	labels := NewLabelCap(1, nil)
	s := NewAmyStore(labels, nil)
	end := func(agent string) amyturn.Record {
		return amyturn.Record{Name: amyturn.EventAgentEnd, Agent: agent, CostUSD: 0.5, HasCost: true}
	}
	s.Observe("prod", "turn-1", "1", amyturn.Record{Name: amyturn.EventTurnStarted}, fixedNow)
	s.Observe("prod", "turn-1", "2", end("a1"), fixedNow)
	s.Observe("prod", "turn-1", "3", end("a2"), fixedNow)
	labels.SetMax(10)
	// A replay of event 3 that names the agent differently is the same
	// event: dropped, nothing moves out of "other".
	if s.Observe("prod", "turn-1", "3", end("a3"), fixedNow) {
		t.Fatal("a replayed event id was counted")
	}
	totals := s.upstream("prod").totals
	if got := totals[SeriesKey{FamAmyAgentRuns, "other", "", ""}]; got != 1 {
		t.Errorf("agent runs under other: %d, want 1", got)
	}
	var runs int64
	for k, v := range totals {
		if k.Fam == FamAmyAgentRuns {
			runs += v
		}
	}
	if runs != 2 {
		t.Errorf("agent runs %d, want 2", runs)
	}
}

func assertSameTotals(t *testing.T, when string, want, got contribution) {
	t.Helper()
	if len(want) != len(got) {
		t.Errorf("%s: %d series, want %d", when, len(got), len(want))
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s: %v = %d, want %d", when, k, got[k], v)
		}
	}
}
