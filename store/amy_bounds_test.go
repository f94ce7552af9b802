package store

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/amp-exporter/amp-exporter/parser/amyturn"
)

func amyCount(s *AmyStore, upstream string, f Family, l1 string) int64 {
	for _, u := range s.Snapshot() {
		if u.Name == upstream {
			return u.Totals[SeriesKey{f, l1, "", ""}]
		}
	}
	return 0
}

// turnEvents is a turn of n events: turn.started, phases, turn.completed.
func turnEvent(id, n int) amyturn.Record {
	switch id {
	case 1:
		return amyturn.Record{Name: amyturn.EventTurnStarted}
	case n:
		return amyturn.Record{Name: amyturn.EventTurnCompleted}
	}
	return amyturn.Record{Name: amyturn.EventPhase}
}

// TestAmyReplayOnlyIfSeen is issue 10's lost events: the exporter follows a
// turn from event 1 while a proxied client resumes with Last-Event-Id: 20
// (counted 19 of 35), and a client that resumed at 20 followed by one that
// reads the whole turn (lost turn.started).
// Counting rule 8 (docs/counting.md).
func TestAmyReplayOnlyIfSeen(t *testing.T) {
	const n = 35
	t0 := time.Unix(1_750_000_000, 0)
	t.Run("interleaved", func(t *testing.T) {
		s := NewAmyStore(NewLabelCap(100, nil), nil)
		follower, client := 1, 21
		for follower <= n || client <= n {
			if client <= n { // the client's events arrive first
				s.Observe("up", "t", strconv.Itoa(client), turnEvent(client, n), t0)
				client++
			}
			if follower <= n {
				s.Observe("up", "t", strconv.Itoa(follower), turnEvent(follower, n), t0)
				follower++
			}
		}
		counted := int64(0)
		for _, e := range amyturn.Catalogue {
			counted += amyCount(s, "up", FamAmyEvents, e)
		}
		if counted != n || amyCount(s, "up", FamAmyDuplicates, "") != n-20 {
			t.Fatalf("counted %d of %d events, %d duplicates", counted, n, amyCount(s, "up", FamAmyDuplicates, ""))
		}
	})
	t.Run("resumed reader first", func(t *testing.T) {
		s := NewAmyStore(NewLabelCap(100, nil), nil)
		for id := 21; id <= n; id++ {
			s.Observe("up", "t", strconv.Itoa(id), turnEvent(id, n), t0)
		}
		if r := s.ResumeID("up", "t"); r != "" {
			t.Errorf("resume id %q: the turn's start was never seen, a follower must read it from the start", r)
		}
		for id := 1; id <= n; id++ {
			s.Observe("up", "t", strconv.Itoa(id), turnEvent(id, n), t0)
		}
		if got := amyCount(s, "up", FamAmyStarted, ""); got != 1 {
			t.Fatalf("turn.started counted %d times, want 1", got)
		}
		if got := amyCount(s, "up", FamAmyFinished, amyturn.OutcomeCompleted); got != 1 {
			t.Fatalf("turn.completed counted %d times", got)
		}
		if r := s.ResumeID("up", "t"); r != "35" {
			t.Errorf("resume id %q, want 35", r)
		}
	})
}

// TestAmyHugeEventIDsAreRefused: an upstream sending ~1 MB event ids (9 GB
// of RSS and a 1.5 GB amy-state.json in issue 10), scaled down: the ids are
// refused and counted, and the state stays small.
func TestAmyHugeEventIDsAreRefused(t *testing.T) {
	s := NewAmyStore(NewLabelCap(100, nil), nil)
	t0 := time.Unix(1_750_000_000, 0)
	big := strings.Repeat("x", 64<<10)
	const events = 150
	for i := range events {
		s.Observe("up", "t", big+strconv.Itoa(i), amyturn.Record{Name: amyturn.EventPhase}, t0)
	}
	if got := amyCount(s, "up", FamAmyRefused, amyturn.RefusedIDTooLong); got != events {
		t.Errorf("refused %d, want %d", got, events)
	}
	// Ids within the limit are kept as fixed-size hashes, whatever their length.
	for i := range 1000 {
		s.Observe("up", "t", fmt.Sprintf("%0200d", i), amyturn.Record{Name: amyturn.EventPhase}, t0)
	}
	b, err := json.Marshal(s.Export())
	if err != nil {
		t.Fatal(err)
	}
	if len(b) > 64<<10 {
		t.Errorf("state of %d bytes for 1000 ids", len(b))
	}
	if strings.Contains(string(b), "0000000000000000000000000000000000000000") {
		t.Error("an event id is stored whole")
	}
	// Turn ids are bounded too (they come from clients' URLs).
	s.Observe("up", strings.Repeat("T", MaxTurnIDBytes+1), "1", amyturn.Record{Name: amyturn.EventPhase}, t0)
	if got := amyCount(s, "up", FamAmyRefused, RefusedTurnIDTooLong); got != 1 {
		t.Errorf("long turn id refused %d times", got)
	}
}

// TestAmyStateBudget: many turns, each with many distinct ids, fill the
// store's byte budget; what is past it is refused and counted, and the
// persisted state stays within the budget.
func TestAmyStateBudget(t *testing.T) {
	s := NewAmyStore(NewLabelCap(100, nil), nil)
	const budget = 256 << 10
	s.SetStateBudget(budget)
	t0 := time.Unix(1_750_000_000, 0)
	for turn := range 200 {
		for id := range 200 {
			s.Observe("up", "turn-"+strconv.Itoa(turn), "e-"+strconv.Itoa(id), amyturn.Record{Name: amyturn.EventPhase}, t0)
		}
	}
	if amyCount(s, "up", FamAmyRefused, amyturn.RefusedStateBudget) == 0 {
		t.Fatal("nothing refused past the state budget")
	}
	b, err := json.Marshal(s.Export())
	if err != nil {
		t.Fatal(err)
	}
	if len(b) > 2*budget {
		t.Errorf("state file of %d bytes for a budget of %d", len(b), budget)
	}
	// A monotonic stream needs no more memory: it still counts.
	before := amyCount(s, "up", FamAmyEvents, amyturn.EventPhase)
	s.Observe("up", "turn-0", "e-0", amyturn.Record{Name: amyturn.EventPhase}, t0) // a replay
	if amyCount(s, "up", FamAmyEvents, amyturn.EventPhase) != before {
		t.Error("a replay was counted")
	}
}

// TestAmyPruneKeepsUnfinishedTurns: a turn silent for more than two hours
// while turn_timeout is longer is kept, so the next reconnect without
// Last-Event-Id does not count it twice.
func TestAmyPruneKeepsUnfinishedTurns(t *testing.T) {
	now := time.Unix(1_750_000_000, 0)
	s := NewAmyStore(NewLabelCap(100, nil), func() time.Time { return now })
	s.SetTurnTimeout(6 * time.Hour)
	const n = 10
	for id := 1; id < n; id++ { // not finished
		s.Observe("up", "t", strconv.Itoa(id), turnEvent(id, n), now)
	}
	now = now.Add(2*time.Hour + time.Minute)
	s.Prune()
	for id := 1; id <= n; id++ { // replayed from the start, then finished
		s.Observe("up", "t", strconv.Itoa(id), turnEvent(id, n), now)
	}
	if got := amyCount(s, "up", FamAmyStarted, ""); got != 1 {
		t.Fatalf("turn.started counted %d times", got)
	}
	if got := amyCount(s, "up", FamAmyDuplicates, ""); got != n-1 {
		t.Fatalf("%d duplicates, want %d", got, n-1)
	}
	// Finished turns still go after the replay window, unfinished ones
	// after turn_timeout plus that window.
	now = now.Add(2*time.Hour + time.Minute)
	s.Observe("up", "u", "1", turnEvent(1, n), now)
	now = now.Add(6*time.Hour + time.Minute)
	s.Prune()
	if r := s.ResumeID("up", "t"); r != "" {
		t.Errorf("finished turn kept past the replay window")
	}
	if r := s.ResumeID("up", "u"); r != "1" {
		t.Errorf("unfinished turn dropped within turn_timeout + the replay window")
	}
}

// TestAmyStateFromEarlierVersions: a high-water mark and whole ids from an
// earlier state file are read as seen ranges and hashes.
func TestAmyStateFromEarlierVersions(t *testing.T) {
	var st AmyState
	if err := json.Unmarshal([]byte(`{"version":`+strconv.Itoa(StateVersion)+`,"upstreams":{},"turns":{"up\u0000t":{"upstream":"up","last_id":7,"has_last_id":true,"seen_ids":{"evt_a":true},"started":true}}}`), &st); err != nil {
		t.Fatal(err)
	}
	s := NewAmyStore(NewLabelCap(100, nil), nil)
	if err := s.Import(&st); err != nil {
		t.Fatal(err)
	}
	t0 := time.Unix(1_750_000_000, 0)
	s.Observe("up", "t", "5", amyturn.Record{Name: amyturn.EventPhase}, t0)
	s.Observe("up", "t", "evt_a", amyturn.Record{Name: amyturn.EventPhase}, t0)
	if got := amyCount(s, "up", FamAmyDuplicates, ""); got != 2 {
		t.Fatalf("%d duplicates, want 2", got)
	}
	if r := s.ResumeID("up", "t"); r != "7" {
		t.Errorf("resume id %q", r)
	}
}
