package store

import (
	"math"
	"reflect"
	"testing"

	"github.com/amp-exporter/amp-exporter/parser/streamjson"
	"github.com/amp-exporter/amp-exporter/parser/thread"
)

// run is a stream-json run of thread id: a prompt, an answer with usage,
// a tool call and its result.
func run(id string) []streamjson.Increments {
	return []streamjson.Increments{
		{SessionID: id, UserMessages: 1, Prompts: 1},
		{SessionID: id, AssistantMessages: 1, Model: "claude-sonnet-4-5", StopReason: "end_turn",
			Tokens: &streamjson.Usage{Input: 100, Output: 10}},
		{SessionID: id, UserMessages: 1, ToolCalls: []streamjson.ToolCall{{Tool: "Bash", Status: "done"}}},
		{SessionID: id, Result: true, Executions: []streamjson.Execution{{Outcome: "success", Seconds: 3, HasDuration: true, Turns: 1, HasTurns: true}}},
	}
}

func streamTotals(s *StreamStore) (messages, tokens, executions int64) {
	snap := s.Snapshot()
	for k, v := range snap.totals {
		switch k.Fam {
		case FamMessages:
			messages += v
		case FamTokens:
			tokens += v
		case FamExecutions:
			executions += v
		}
	}
	return
}

func TestStreamRunAndServerCountOnce(t *testing.T) {
	cases := []struct {
		name         string
		serverFirst  bool
		serverLists  bool
		wantMessages int64
	}{
		{name: "stream first, server lists the run", serverLists: true, wantMessages: 0},
		{name: "server first", serverFirst: true, serverLists: true, wantMessages: 0},
		{name: "server never lists the run", wantMessages: 3},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			owners := NewOwners()
			s := NewStreamStore(NewLabelCap(100, nil), nil)
			s.EnableAmpServerDedupe(owners)
			if tc.serverFirst {
				owners.Claim("T-1", SourceAmpServer)
			}
			s.Apply(run("T-1"))
			if _, _, ex := streamTotals(s); ex != 1 {
				t.Fatalf("executions %d, want 1 at once", ex)
			}
			// One sync without the run: still held.
			s.AmpServerSynced()
			if m, _, _ := streamTotals(s); m != 0 {
				t.Fatalf("messages %d counted before the server had its two syncs", m)
			}
			if tc.serverLists && !tc.serverFirst {
				owners.Claim("T-1", SourceAmpServer)
			}
			s.AmpServerSynced()
			s.AmpServerSynced()
			m, tok, ex := streamTotals(s)
			if m != tc.wantMessages || ex != 1 {
				t.Fatalf("messages %d executions %d, want %d and 1", m, ex, tc.wantMessages)
			}
			if tc.wantMessages > 0 && tok != 110 {
				t.Fatalf("tokens %d", tok)
			}
			if s.HeldRuns() != 0 {
				t.Fatal("a run is still held")
			}
			// Never flips: the server listing the run later changes
			// nothing, and the owner stays.
			want := map[bool]string{true: SourceAmpServer, false: SourceStream}[tc.serverLists]
			if owners.Claim("T-1", SourceAmpServer) != tc.serverLists || owners.Owner("T-1") != want {
				t.Fatalf("owner %q", owners.Owner("T-1"))
			}
		})
	}
}

func TestStreamHeldRunsSurviveRestart(t *testing.T) {
	owners := NewOwners()
	s := NewStreamStore(NewLabelCap(100, nil), nil)
	s.EnableAmpServerDedupe(owners)
	s.Apply(run("T-1"))
	s.Apply(run("T-2"))
	s.AmpServerSynced()
	s.AmpServerSynced() // T-1 and T-2 are the stream's now
	s.Apply(run("T-3"))
	st := s.Export()

	r := NewStreamStore(NewLabelCap(100, nil), nil)
	o2 := NewOwners()
	r.EnableAmpServerDedupe(o2)
	if err := r.Import(st); err != nil {
		t.Fatal(err)
	}
	o2.Seed(SourceStream, r.StreamOwned())
	if r.HeldRuns() != 1 || o2.Owner("T-1") != SourceStream {
		t.Fatalf("held %d owner %q", r.HeldRuns(), o2.Owner("T-1"))
	}
	r.AmpServerSynced()
	r.AmpServerSynced()
	if m, _, ex := streamTotals(r); m != 9 || ex != 3 {
		t.Fatalf("messages %d executions %d", m, ex)
	}

	// With the server source switched off, held runs count at once.
	off := NewStreamStore(NewLabelCap(100, nil), nil)
	if err := off.Import(st); err != nil {
		t.Fatal(err)
	}
	if m, _, _ := streamTotals(off); m != 9 {
		t.Fatalf("messages %d with the server off", m)
	}
}

func TestStreamWithoutServerUnchanged(t *testing.T) {
	s := NewStreamStore(NewLabelCap(100, nil), nil)
	s.Apply(run("T-1"))
	if m, _, ex := streamTotals(s); m != 3 || ex != 1 {
		t.Fatalf("messages %d executions %d", m, ex)
	}
}

// A thread's bill is one amount split by kind: whatever shapes Amp's
// answers take (a breakdown, then a total only, or the reverse), the sum
// over kinds is the largest amount billed, never the sum of two shapes,
// and no kind goes down.
func TestBilledIsOneAmountSplitByKind(t *testing.T) {
	cases := []struct {
		name  string
		bills []map[string]float64
		want  map[string]float64
	}{
		{"breakdown then total only", []map[string]float64{{"free": 10}, {"total": 2}}, map[string]float64{"free": 10}},
		{"total only then breakdown", []map[string]float64{{"total": 2}, {"free": 10}}, map[string]float64{"total": 2, "free": 8}},
		{"breakdown grows", []map[string]float64{{"free": 3, "paid": 2}, {"free": 3, "paid": 4}}, map[string]float64{"free": 3, "paid": 4}},
		{"bill shrinks", []map[string]float64{{"total": 5}, {"total": 3}}, map[string]float64{"total": 5}},
		{"split moves", []map[string]float64{{"paid": 0.5, "free": 0.25}, {"paid": 0.4, "free": 0.75}}, map[string]float64{"paid": 0.5, "free": 0.65}},
		{"total beside a breakdown", []map[string]float64{{"subscription": 1, "total": 0.5}}, map[string]float64{"subscription": 1, "total": 0.5}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := NewThreadStore(StoreOptions{})
			s.Apply(AmpServerPath("T-b"), FileVersion{AmpServerV: 1}, &thread.Summary{ID: "T-b", UserMessages: 1})
			for _, b := range tc.bills {
				s.ApplyBilled("T-b", b)
			}
			totals := s.Snapshot().Totals()
			got := map[string]float64{}
			var sum, wantSum float64
			for _, kind := range BilledKinds {
				if v := Unfixed(FamBilled, totals[SeriesKey{Fam: FamBilled, L1: kind}]); v != 0 {
					got[kind] = v
					sum += v
				}
				wantSum += tc.want[kind]
			}
			if !reflect.DeepEqual(got, tc.want) || math.Abs(sum-wantSum) > 1e-9 {
				t.Fatalf("billed %v (sum %g), want %v", got, sum, tc.want)
			}
			if s.ApplyBilled("T-b", tc.bills[len(tc.bills)-1]) {
				t.Fatal("the same bill again changed the counts")
			}
		})
	}
}
