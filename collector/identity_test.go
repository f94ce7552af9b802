package collector

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/amp-exporter/amp-exporter/pricing"
)

// The tests of this file hold the store to design.md's first counting rule:
// every counted thing has an identity and counts once, under the labels it
// had when it was first counted. Each case was a wrong total before the
// store kept per-item identities (issue 9).

// familySum adds every series of a family, whatever its labels.
func familySum(s *ThreadStore, f family) int64 {
	var n int64
	for k, v := range s.Snapshot().totals {
		if k.fam == f {
			n += v
		}
	}
	return n
}

func series(s *ThreadStore, f family, l1, l2 string) int64 {
	return s.Snapshot().totals[seriesKey{f, l1, l2}]
}

// thread builds a thread document from its messages.
func threadDoc(id, extra string, msgs ...string) string {
	if extra != "" {
		extra = "," + extra
	}
	return fmt.Sprintf(`{"v":1,"id":%q,"agentMode":"smart"%s,"messages":[%s]}`, id, extra, strings.Join(msgs, ","))
}

func userMsg(id int, text string) string {
	return fmt.Sprintf(`{"role":"user","messageId":%d,"meta":{"sentAt":1770000000000},"content":[{"type":"text","text":%q}]}`, id, text)
}

func assistantMsg(id int, state, usage string) string {
	return fmt.Sprintf(`{"role":"assistant","messageId":%d,"content":[{"type":"text","text":"ok"}],"state":%s,"usage":%s}`, id, state, usage)
}

const (
	stToolUse   = `{"type":"complete","stopReason":"tool_use"}`
	stEndTurn   = `{"type":"complete","stopReason":"end_turn"}`
	stCancelled = `{"type":"cancelled"}`
	stStreaming = `{"type":"streaming"}`
	stError     = `{"type":"error","error":{"message":"overloaded"}}`
)

func usageOf(model string, in, out int) string {
	m := ""
	if model != "" {
		m = fmt.Sprintf(`"model":%q,`, model)
	}
	return fmt.Sprintf(`{%s"inputTokens":%d,"outputTokens":%d,"maxInputTokens":1000,"totalInputTokens":%d}`, m, in, out, in)
}

func newTestStore(max int) *ThreadStore {
	return NewThreadStore(StoreOptions{MaxLabelValues: max, Now: func() time.Time { return fixedNow }})
}

// Item 1: a message written as complete/tool_use and rewritten as cancelled
// when the user interrupts its tool is one finished message.
func TestStopReasonChangeCountsOnce(t *testing.T) {
	s := newTestStore(0)
	toolUse := `{"role":"assistant","messageId":1,"content":[{"type":"tool_use","id":"tu1","name":"Bash","complete":true,"input":{}}],"state":%s,"usage":` + usageOf("m1", 10, 100) + `}`
	before := threadDoc("T-1", "", userMsg(0, "go"), fmt.Sprintf(toolUse, stToolUse))
	after := threadDoc("T-1", "", userMsg(0, "go"), fmt.Sprintf(toolUse, stCancelled),
		`{"role":"user","messageId":2,"content":[{"type":"tool_result","toolUseID":"tu1","run":{"status":"cancelled"}}]}`)
	for i, doc := range []string{before, after, before, after} {
		s.Apply("/d/T-1.json", FileVersion{Size: int64(i)}, summaryOf(t, doc))
		if got := familySum(s, famFinished); got != 1 {
			t.Fatalf("step %d: amp_assistant_messages_total sums to %d over stop reasons, want 1", i, got)
		}
	}
	if got := series(s, famFinished, "m1", "tool_use"); got != 1 {
		t.Errorf("the message left the stop reason it was first counted under: tool_use=%d", got)
	}
	if got := series(s, famMessages, "assistant", ""); got != 1 {
		t.Errorf("assistant messages %d, want 1", got)
	}
	// The context-window observation of the message is one observation.
	if got := familySum(s, famContextBucket); got != 1 {
		t.Errorf("context-window observations %d, want 1", got)
	}
}

// Item 4: a message whose model is filled in late, or that is retried on
// another model after a provider error, is one message and its tokens are
// counted once.
func TestModelFilledInLateCountsOnce(t *testing.T) {
	tests := []struct {
		name  string
		steps []string // the same message, rewritten
		// the model its tokens and stop reason end up under
		wantModel string
		wantOut   int64
	}{
		{"streaming without model, then complete with one",
			[]string{assistantMsg(1, stStreaming, usageOf("", 10, 40)), assistantMsg(1, stEndTurn, usageOf("m1", 10, 100))},
			"m1", 100},
		{"complete without model, then the model written",
			[]string{assistantMsg(1, stEndTurn, usageOf("", 10, 100)), assistantMsg(1, stEndTurn, usageOf("m1", 10, 100))},
			"unknown", 100},
		{"provider error, retried on another model",
			[]string{assistantMsg(1, stError, usageOf("m1", 10, 0)), assistantMsg(1, stEndTurn, usageOf("m2", 10, 100))},
			"m1", 100},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := newTestStore(0)
			for i, m := range tc.steps {
				s.Apply("/d/T-1.json", FileVersion{Size: int64(i)}, summaryOf(t, threadDoc("T-1", "", userMsg(0, "go"), m)))
				if got := familySum(s, famFinished); got > 1 {
					t.Fatalf("step %d: one message counted %d times in amp_assistant_messages_total", i, got)
				}
			}
			var out, in int64
			for k, v := range s.Snapshot().totals {
				if k.fam == famTokens && k.l2 == "output" {
					out += v
				}
				if k.fam == famTokens && k.l2 == "input" {
					in += v
				}
			}
			if out != tc.wantOut || in != 10 {
				t.Errorf("tokens over all models: input %d output %d, want 10 and %d", in, out, tc.wantOut)
			}
			if got := series(s, famTokens, tc.wantModel, "output"); got != tc.wantOut {
				t.Errorf("output tokens of %s = %d, want %d", tc.wantModel, got, tc.wantOut)
			}
			if got := familySum(s, famContextBucket); got != 1 {
				t.Errorf("context-window observations %d, want 1", got)
			}
		})
	}
}

// Item 2: raising limits.max_label_values lets a folded value out of
// "other" for what is counted from then on; what was counted stays where it
// was, and nothing is counted twice.
func TestRaisedLabelCapMovesNothing(t *testing.T) {
	prices := pricing.New(nil, "test", "1", map[string]pricing.Price{"m1": {Input: 1, Output: 1}, "m2": {Input: 2, Output: 2}})
	a := threadDoc("T-a", "", userMsg(0, "a"), assistantMsg(1, stEndTurn, usageOf("m1", 10, 40)))
	b := threadDoc("T-b", "", userMsg(0, "b"), assistantMsg(1, stEndTurn, usageOf("m2", 10, 100)))
	bGrown := threadDoc("T-b", "", userMsg(0, "b"), assistantMsg(1, stEndTurn, usageOf("m2", 10, 100)),
		userMsg(2, "more"), assistantMsg(3, stEndTurn, usageOf("m2", 0, 50)))
	check := func(t *testing.T, s *ThreadStore, out, other, m2 int64, cost int64) {
		t.Helper()
		if got := sumType(s, "output"); got != out {
			t.Errorf("output tokens %d, want %d", got, out)
		}
		if got := series(s, famTokens, "other", "output"); got != other {
			t.Errorf("other output %d, want %d", got, other)
		}
		if got := series(s, famTokens, "m2", "output"); got != m2 {
			t.Errorf("m2 output %d, want %d", got, m2)
		}
		if got := familySum(s, famFinished); got != 2+boolInt(m2 > 0) {
			t.Errorf("finished messages %d", got)
		}
		if got := familySum(s, famCost); got != cost {
			t.Errorf("cost %d (1e-10 USD), want %d", got, cost)
		}
	}
	// $1/M for m1, $2/M for m2: 1e4 and 2e4 units of 1e-10 USD per token.
	costBefore := int64(50*1e4 + 110*2e4)
	costAfter := costBefore + 50*2e4

	t.Run("reload", func(t *testing.T) {
		s := newTestStore(1)
		s.SetPrices(prices)
		s.Apply("/d/T-a.json", FileVersion{}, summaryOf(t, a))
		s.Apply("/d/T-b.json", FileVersion{}, summaryOf(t, b))
		check(t, s, 140, 100, 0, costBefore)
		s.labels.SetMax(10)
		s.Apply("/d/T-b.json", FileVersion{Size: 1}, summaryOf(t, b))
		check(t, s, 140, 100, 0, costBefore)
		s.Apply("/d/T-b.json", FileVersion{Size: 2}, summaryOf(t, bGrown))
		check(t, s, 190, 100, 50, costAfter)
	})
	t.Run("restart with a higher cap", func(t *testing.T) {
		s := newTestStore(1)
		s.SetPrices(prices)
		s.Apply("/d/T-a.json", FileVersion{}, summaryOf(t, a))
		s.Apply("/d/T-b.json", FileVersion{}, summaryOf(t, b))
		restored := newTestStore(10)
		restored.SetPrices(prices)
		if err := restored.Import(roundTrip(t, s.Export())); err != nil {
			t.Fatal(err)
		}
		restored.Apply("/d/T-a.json", FileVersion{}, summaryOf(t, a))
		restored.Apply("/d/T-b.json", FileVersion{}, summaryOf(t, b))
		check(t, restored, 140, 100, 0, costBefore)
		restored.Apply("/d/T-b.json", FileVersion{Size: 2}, summaryOf(t, bGrown))
		check(t, restored, 190, 100, 50, costAfter)
	})
}

func sumType(s *ThreadStore, typ string) int64 {
	var n int64
	for k, v := range s.Snapshot().totals {
		if k.fam == famTokens && k.l2 == typ {
			n += v
		}
	}
	return n
}

func boolInt(b bool) int64 {
	if b {
		return 1
	}
	return 0
}

func roundTrip(t *testing.T, st *State) *State {
	t.Helper()
	data, err := json.Marshal(st)
	if err != nil {
		t.Fatal(err)
	}
	var back State
	if err := json.Unmarshal(data, &back); err != nil {
		t.Fatal(err)
	}
	return &back
}

// The stop reason a message was first counted under survives a restart.
func TestPinnedLabelsSurviveRestart(t *testing.T) {
	before := threadDoc("T-1", "", userMsg(0, "go"), assistantMsg(1, stToolUse, usageOf("m1", 10, 100)))
	after := threadDoc("T-1", "", userMsg(0, "go"), assistantMsg(1, stCancelled, usageOf("m1", 10, 100)))
	s := newTestStore(0)
	s.Apply("/d/T-1.json", FileVersion{}, summaryOf(t, before))
	restored := newTestStore(0)
	if err := restored.Import(roundTrip(t, s.Export())); err != nil {
		t.Fatal(err)
	}
	restored.Apply("/d/T-1.json", FileVersion{Size: 1}, summaryOf(t, after))
	if got := familySum(restored, famFinished); got != 1 {
		t.Fatalf("after a restart the rewritten message counts %d times", got)
	}
}

// A state file written before items were pinned still loads, and the thread
// is pinned from the first snapshot seen after the restore.
func TestStateWithoutPinsLoads(t *testing.T) {
	before := threadDoc("T-1", "", userMsg(0, "go"), assistantMsg(1, stToolUse, usageOf("m1", 10, 100)))
	after := threadDoc("T-1", "", userMsg(0, "go"), assistantMsg(1, stCancelled, usageOf("m1", 10, 100)))
	s := newTestStore(0)
	s.Apply("/d/T-1.json", FileVersion{}, summaryOf(t, before))
	data, err := json.Marshal(s.Export())
	if err != nil {
		t.Fatal(err)
	}
	// Strip every field this version added to a thread's state.
	var raw map[string]any
	if err := json.Unmarshal(data, &raw); err != nil {
		t.Fatal(err)
	}
	for _, th := range raw["threads"].(map[string]any) {
		th := th.(map[string]any)
		for k := range th {
			if k != "series" && k != "last_activity_ms" {
				delete(th, k)
			}
		}
	}
	data, _ = json.Marshal(raw)
	var old State
	if err := json.Unmarshal(data, &old); err != nil {
		t.Fatal(err)
	}
	restored := newTestStore(0)
	if err := restored.Import(&old); err != nil {
		t.Fatalf("a state without pins is refused: %v", err)
	}
	restored.Apply("/d/T-1.json", FileVersion{}, summaryOf(t, before))
	restored.Apply("/d/T-1.json", FileVersion{Size: 1}, summaryOf(t, after))
	if got := familySum(restored, famFinished); got != 1 {
		t.Fatalf("finished %d, want 1", got)
	}
}

// Also checked: a fork whose forkPointIndex (and relationship) disappear on
// a later rewrite still does not count its parent's messages.
func TestForkPointThatDisappearsStillExcludesCopies(t *testing.T) {
	copied := []string{userMsg(0, "parent prompt"), assistantMsg(1, stEndTurn, usageOf("m1", 10, 100))}
	own := []string{userMsg(2, "fork prompt"), assistantMsg(3, stEndTurn, usageOf("m1", 5, 50))}
	fork := threadDoc("T-f", `"forkPointIndex":1,"relationships":[{"threadID":"T-p","type":"fork","role":"child","messageIndex":1}]`, append(copied, own...)...)
	truncated := threadDoc("T-f", "", append(copied, own...)...)
	s := newTestStore(0)
	s.Apply("/d/T-f.json", FileVersion{}, summaryOf(t, fork))
	s.Apply("/d/T-f.json", FileVersion{Size: 1}, summaryOf(t, truncated))
	if got := series(s, famTokens, "m1", "output"); got != 50 {
		t.Errorf("fork output tokens %d, want its own 50", got)
	}
	if got := familySum(s, famPrompts); got != 1 {
		t.Errorf("fork prompts %d, want 1", got)
	}
	if got := familySum(s, famFinished); got != 1 {
		t.Errorf("fork finished messages %d, want 1", got)
	}
}

// Also checked: a rewrite that truncates a thread and writes new messages in
// the old positions counts the new messages under their own labels (a
// message's identity is its messageId, which Amp never reuses).
func TestTruncatedAndRewrittenMessagesAreNewItems(t *testing.T) {
	s := newTestStore(0)
	s.Apply("/d/T-1.json", FileVersion{}, summaryOf(t, threadDoc("T-1", "", userMsg(0, "a"), assistantMsg(1, stEndTurn, usageOf("m1", 10, 100)))))
	s.Apply("/d/T-1.json", FileVersion{Size: 1}, summaryOf(t, threadDoc("T-1", "", userMsg(2, "b"), assistantMsg(3, stEndTurn, usageOf("m2", 10, 60)))))
	if got, want := sumType(s, "output"), int64(160); got != want {
		t.Errorf("output %d, want %d", got, want)
	}
	if got := series(s, famTokens, "m2", "output"); got != 60 {
		t.Errorf("m2 output %d, want 60", got)
	}
}

// TestPricesSetDuringItemApplyAreUsed is TestPricesSetDuringApplyAreUsed
// for a summary made by thread.Summarize, counted item by item.
func TestPricesSetDuringItemApplyAreUsed(t *testing.T) {
	old := &pausingPrices{
		Prices:  pricing.New(nil, "test", "1", map[string]pricing.Price{"m1": {Input: 2, Output: 10}}),
		entered: make(chan struct{}), release: make(chan struct{}),
	}
	s := newTestStore(0)
	s.SetPrices(old)
	sum := summaryOf(t, threadDoc("T-1", "", userMsg(0, "go"), assistantMsg(1, stEndTurn, usageOf("m1", 1_000_000, 0))))
	done := make(chan struct{})
	go func() { s.Apply("/d/T-1.json", FileVersion{}, sum); close(done) }()
	<-old.entered
	s.SetPrices(pricing.New(nil, "test", "2", map[string]pricing.Price{"m1": {Input: 1.7, Output: 9}}))
	close(old.release)
	<-done
	if got := unfixed(famCost, s.Snapshot().totals[seriesKey{famCost, "m1", ""}]); got != 1.7 {
		t.Fatalf("1M input tokens counted after the price change cost $%v, want $1.7 (the new price)", got)
	}
}
