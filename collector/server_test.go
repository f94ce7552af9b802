package collector

import (
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

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
		switch k.fam {
		case famMessages:
			messages += v
		case famTokens:
			tokens += v
		case famExecutions:
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
			s.EnableServerDedupe(owners)
			if tc.serverFirst {
				owners.Claim("T-1", SourceServer)
			}
			s.Apply(run("T-1"))
			if _, _, ex := streamTotals(s); ex != 1 {
				t.Fatalf("executions %d, want 1 at once", ex)
			}
			// One sync without the run: still held.
			s.ServerSynced()
			if m, _, _ := streamTotals(s); m != 0 {
				t.Fatalf("messages %d counted before the server had its two syncs", m)
			}
			if tc.serverLists && !tc.serverFirst {
				owners.Claim("T-1", SourceServer)
			}
			s.ServerSynced()
			s.ServerSynced()
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
			want := map[bool]string{true: SourceServer, false: SourceStream}[tc.serverLists]
			if owners.Claim("T-1", SourceServer) != tc.serverLists || owners.Owner("T-1") != want {
				t.Fatalf("owner %q", owners.Owner("T-1"))
			}
		})
	}
}

func TestStreamHeldRunsSurviveRestart(t *testing.T) {
	owners := NewOwners()
	s := NewStreamStore(NewLabelCap(100, nil), nil)
	s.EnableServerDedupe(owners)
	s.Apply(run("T-1"))
	s.Apply(run("T-2"))
	s.ServerSynced()
	s.ServerSynced() // T-1 and T-2 are the stream's now
	s.Apply(run("T-3"))
	st := s.Export()

	r := NewStreamStore(NewLabelCap(100, nil), nil)
	o2 := NewOwners()
	r.EnableServerDedupe(o2)
	if err := r.Import(st); err != nil {
		t.Fatal(err)
	}
	o2.Seed(SourceStream, r.StreamOwned())
	if r.HeldRuns() != 1 || o2.Owner("T-1") != SourceStream {
		t.Fatalf("held %d owner %q", r.HeldRuns(), o2.Owner("T-1"))
	}
	r.ServerSynced()
	r.ServerSynced()
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

func TestServerStoreExposition(t *testing.T) {
	local := NewThreadStore(StoreOptions{})
	server := NewThreadStore(StoreOptions{})
	owners := NewOwners()
	local.SetClaim(owners, SourceThreads)
	server.SetClaim(owners, SourceServer)
	sum := func(id string) *thread.Summary {
		return &thread.Summary{ID: id, AgentMode: "smart", UserMessages: 1, AssistantMessages: 1, Prompts: 1,
			Tokens: map[string]thread.Tokens{"claude-sonnet-4-5": {Input: 10, Output: 5}}}
	}
	local.Apply("/d/T-a.json", FileVersion{Size: 1}, sum("T-a"))
	server.Apply(ServerPath("T-a"), FileVersion{ServerV: 3}, sum("T-a")) // a local file owns it
	server.Apply(ServerPath("T-b"), FileVersion{ServerV: 3}, sum("T-b"))
	server.ApplyBilled("T-b", map[string]float64{"paid": 0.5, "free": 0.25})
	server.ApplyBilled("T-b", map[string]float64{"paid": 0.4, "free": 0.75}) // paid never goes down
	if server.ApplyBilled("T-a", map[string]float64{"total": 9}) {
		t.Fatal("billed a thread the server does not count")
	}
	c := NewAmpCollector(local, nil)
	c.SetServerStore(server)
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(c)
	want := `
# HELP amp_billed_cost_usd_total What Amp itself bills for the threads read from the Amp server (threadDisplayCostInfo), by kind: free, paid, subscription from its breakdown, total where it gives none. The real figure beside the amp_cost_usd_total estimate.
# TYPE amp_billed_cost_usd_total counter
amp_billed_cost_usd_total{kind="free",source="server"} 0.75
amp_billed_cost_usd_total{kind="paid",source="server"} 0.5
amp_billed_cost_usd_total{kind="subscription",source="server"} 0
amp_billed_cost_usd_total{kind="total",source="server"} 0
# HELP amp_threads Amp thread files currently present and readable, by agent mode.
# TYPE amp_threads gauge
amp_threads{agent_mode="smart"} 2
# HELP amp_messages_total Amp messages seen, by role (user, assistant).
# TYPE amp_messages_total counter
amp_messages_total{role="assistant",source="server"} 1
amp_messages_total{role="assistant",source="threads"} 1
amp_messages_total{role="user",source="server"} 1
amp_messages_total{role="user",source="threads"} 1
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "amp_billed_cost_usd_total", "amp_threads", "amp_messages_total"); err != nil {
		t.Fatal(err)
	}
	if probs, err := testutil.GatherAndLint(reg); err != nil || len(probs) > 0 {
		t.Fatalf("lint: %v %v", probs, err)
	}
	// Billed values persist with the thread.
	r := NewThreadStore(StoreOptions{})
	if err := r.Import(server.Export()); err != nil {
		t.Fatal(err)
	}
	if got := r.Snapshot().totals[seriesKey{famBilled, "paid", ""}]; got != fixed(famBilled, 0.5) {
		t.Fatalf("restored paid %d", got)
	}
}

func TestServerMetricsEntitlement(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	m := NewServerMetrics(reg, []string{"listThreads"})
	limit, used := 10.0, 0.85
	m.SetEntitlement(Entitlement{Window: "daily", LimitUSD: &limit, UsedRatio: &used})
	m.SetEntitlement(Entitlement{Window: "weekly window!", LimitUSD: &limit})
	want := `
# HELP amp_entitlement_limit_usd The Amp user's entitlement in the current window, in US dollars.
# TYPE amp_entitlement_limit_usd gauge
amp_entitlement_limit_usd{window="other"} 10
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "amp_entitlement_limit_usd", "amp_entitlement_used_ratio"); err != nil {
		t.Fatal(err)
	}
}
