package store

import (
	"encoding/json"
	"fmt"
	"math/rand"
	"strings"
	"testing"
	"time"

	"github.com/amp-exporter/amp-exporter/parser/thread"
	"github.com/amp-exporter/amp-exporter/pricing"
)

// The tests of this file hold the store to counting rule 1 (docs/counting.md):
// every counted thing has an identity and counts once, under the labels it
// had when it was first counted. Each case was a wrong total before the
// store kept per-item identities (issue 9).

// familySum adds every series of a family, whatever its labels.
func familySum(s *ThreadStore, f Family) int64 {
	var n int64
	for k, v := range s.Snapshot().totals {
		if k.Fam == f {
			n += v
		}
	}
	return n
}

func series(s *ThreadStore, f Family, l1, l2 string) int64 {
	return s.Snapshot().totals[SeriesKey{f, l1, l2, ""}]
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
		if got := familySum(s, FamFinished); got != 1 {
			t.Fatalf("step %d: amp_assistant_messages_total sums to %d over stop reasons, want 1", i, got)
		}
	}
	if got := series(s, FamFinished, "m1", "tool_use"); got != 1 {
		t.Errorf("the message left the stop reason it was first counted under: tool_use=%d", got)
	}
	if got := series(s, FamMessages, "assistant", ""); got != 1 {
		t.Errorf("assistant messages %d, want 1", got)
	}
	// The context-window observation of the message is one observation.
	if got := familySum(s, FamContextBucket); got != 1 {
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
				if got := familySum(s, FamFinished); got > 1 {
					t.Fatalf("step %d: one message counted %d times in amp_assistant_messages_total", i, got)
				}
			}
			var out, in int64
			for k, v := range s.Snapshot().totals {
				if k.Fam == FamTokens && k.L2 == "output" {
					out += v
				}
				if k.Fam == FamTokens && k.L2 == "input" {
					in += v
				}
			}
			if out != tc.wantOut || in != 10 {
				t.Errorf("tokens over all models: input %d output %d, want 10 and %d", in, out, tc.wantOut)
			}
			if got := series(s, FamTokens, tc.wantModel, "output"); got != tc.wantOut {
				t.Errorf("output tokens of %s = %d, want %d", tc.wantModel, got, tc.wantOut)
			}
			if got := familySum(s, FamContextBucket); got != 1 {
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
		if got := series(s, FamTokens, "other", "output"); got != other {
			t.Errorf("other output %d, want %d", got, other)
		}
		if got := series(s, FamTokens, "m2", "output"); got != m2 {
			t.Errorf("m2 output %d, want %d", got, m2)
		}
		if got := familySum(s, FamFinished); got != 2+boolInt(m2 > 0) {
			t.Errorf("finished messages %d", got)
		}
		if got := familySum(s, FamCost); got != cost {
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
		if k.Fam == FamTokens && k.L2 == typ {
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
// Counting rules 1 and 5 (docs/counting.md).
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
	if got := familySum(restored, FamFinished); got != 1 {
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
	if got := familySum(restored, FamFinished); got != 1 {
		t.Fatalf("finished %d, want 1", got)
	}
}

// Also checked: a fork whose forkPointIndex (and relationship) disappear on
// a later rewrite still does not count its parent's messages.
// Counting rule 11 (docs/counting.md).
func TestForkPointThatDisappearsStillExcludesCopies(t *testing.T) {
	copied := []string{userMsg(0, "parent prompt"), assistantMsg(1, stEndTurn, usageOf("m1", 10, 100))}
	own := []string{userMsg(2, "fork prompt"), assistantMsg(3, stEndTurn, usageOf("m1", 5, 50))}
	fork := threadDoc("T-f", `"forkPointIndex":1,"relationships":[{"threadID":"T-p","type":"fork","role":"child","messageIndex":1}]`, append(copied, own...)...)
	truncated := threadDoc("T-f", "", append(copied, own...)...)
	s := newTestStore(0)
	s.Apply("/d/T-f.json", FileVersion{}, summaryOf(t, fork))
	s.Apply("/d/T-f.json", FileVersion{Size: 1}, summaryOf(t, truncated))
	if got := series(s, FamTokens, "m1", "output"); got != 50 {
		t.Errorf("fork output tokens %d, want its own 50", got)
	}
	if got := familySum(s, FamPrompts); got != 1 {
		t.Errorf("fork prompts %d, want 1", got)
	}
	if got := familySum(s, FamFinished); got != 1 {
		t.Errorf("fork finished messages %d, want 1", got)
	}
}

// Also checked: a rewrite that truncates a thread and writes new messages in
// the old positions counts the new messages under their own labels (a
// message's identity is its messageId, which Amp never reuses).
// Counting rules 1 and 3 (docs/counting.md).
func TestTruncatedAndRewrittenMessagesAreNewItems(t *testing.T) {
	s := newTestStore(0)
	s.Apply("/d/T-1.json", FileVersion{}, summaryOf(t, threadDoc("T-1", "", userMsg(0, "a"), assistantMsg(1, stEndTurn, usageOf("m1", 10, 100)))))
	s.Apply("/d/T-1.json", FileVersion{Size: 1}, summaryOf(t, threadDoc("T-1", "", userMsg(2, "b"), assistantMsg(3, stEndTurn, usageOf("m2", 10, 60)))))
	if got, want := sumType(s, "output"), int64(160); got != want {
		t.Errorf("output %d, want %d", got, want)
	}
	if got := series(s, FamTokens, "m2", "output"); got != 60 {
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
	if got := Unfixed(FamCost, s.Snapshot().totals[SeriesKey{FamCost, "m1", "", ""}]); got != 1.7 {
		t.Fatalf("1M input tokens counted after the price change cost $%v, want $1.7 (the new price)", got)
	}
}

// TestRandomRewritesCountEachItemOnce rewrites one thread many times at
// random — stop reasons and models that change, messages truncated and
// written again, tool results that arrive, a cap raised halfway — and
// checks after every step that each assistant message ever finished is
// counted exactly once in amp_assistant_messages_total, each tool result
// once in amp_tool_calls_total, and that no counter went down.
func TestRandomRewritesCountEachItemOnce(t *testing.T) {
	for seed := int64(1); seed <= 30; seed++ {
		rng := rand.New(rand.NewSource(seed))
		checkRewrites(t, fmt.Sprint("seed ", seed), 40, rng.Intn)
	}
}

// FuzzRewritesCountEachItemOnce is the same with the fuzzer's choices.
func FuzzRewritesCountEachItemOnce(f *testing.F) {
	f.Add([]byte{5, 5, 0, 1, 2, 3, 9, 9, 1, 0, 2, 3, 4})
	f.Add([]byte{9, 1, 1, 0, 9, 2, 2, 1, 0, 0, 9, 3, 0, 2, 1, 1})
	f.Fuzz(func(t *testing.T, data []byte) {
		pick := func(n int) int {
			if len(data) == 0 {
				return 0
			}
			b := int(data[0])
			data = data[1:]
			return b % n
		}
		checkRewrites(t, "", min(len(data)/3+1, 40), pick)
	})
}

// checkRewrites rewrites one thread steps times, choices made by pick.
func checkRewrites(t *testing.T, name string, steps int, pick func(n int) int) {
	t.Helper()
	s := newTestStore(2)
	models := []string{"", "m1", "m2", "m3", "m4"}
	states := []string{stStreaming, stToolUse, stEndTurn, stCancelled, stError}
	finished := map[int]bool{}
	results := map[string]bool{}
	nextID := 0
	var msgs []string
	var ids []int
	prev := contribution{}
	for step := 0; step < steps; step++ {
		switch r := pick(10); {
		case r < 2 && len(msgs) > 0: // truncate
			n := pick(len(msgs))
			msgs, ids = msgs[:n], ids[:n]
		case r < 4 && len(msgs) > 0: // rewrite one assistant message's labels (and lose its tool_use)
			i := pick(len(msgs))
			if ids[i]%3 == 1 {
				msgs[i] = assistantMsg(ids[i], states[pick(len(states))], usageOf(models[pick(len(models))], 10, pick(50)+50))
			}
		default: // append an exchange: prompt, assistant with a tool, result
			st := states[pick(len(states))]
			tool := fmt.Sprintf("tu%d", nextID)
			status := []string{"done", "error", "in-progress"}[pick(3)]
			if status != "in-progress" {
				results[tool] = true // by its toolUseID, the design's identity
			}
			msgs = append(msgs, userMsg(nextID, "p"),
				fmt.Sprintf(`{"role":"assistant","messageId":%d,"content":[{"type":"tool_use","id":%q,"name":"Bash","input":{}}],"state":%s,"usage":%s}`,
					nextID+1, tool, st, usageOf(models[pick(len(models))], 10, 50)),
				fmt.Sprintf(`{"role":"user","messageId":%d,"content":[{"type":"tool_result","toolUseID":%q,"run":{"status":%q}}]}`,
					nextID+2, tool, status))
			ids = append(ids, nextID, nextID+1, nextID+2)
			nextID += 3
		}
		if step == steps/2 {
			s.labels.SetMax(10)
		}
		sum := summaryOf(t, threadDoc("T-r", "", msgs...))
		for _, it := range sum.Items {
			if it.IsMessage() && it.Role == 2 && it.StopReason != "" {
				finished[int(it.Key&(1<<60-1))] = true
			}
		}
		s.Apply("/d/T-r.json", FileVersion{Size: int64(step)}, sum)
		now := s.Snapshot().totals
		if got := familySum(s, FamFinished); got != int64(len(finished)) {
			t.Fatalf("%s step %d: %d finished messages counted, %d distinct ones finished", name, step, got, len(finished))
		}
		if got := familySum(s, FamToolCalls); got != int64(len(results)) {
			t.Fatalf("%s step %d: %d tool results counted, %d distinct ones", name, step, got, len(results))
		}
		for k, v := range prev {
			if now[k] < v {
				t.Fatalf("%s step %d: %v went down from %d to %d", name, step, k, v, now[k])
			}
		}
		prev = now
	}
}

// A user who edits an earlier prompt truncates the thread there and writes
// new messages (with new messageIds): they are new spending, counted in
// full, while what the removed messages spent stays counted. Max-merging
// per-series sums alone counted the new messages only past the old sums.
// Counting rule 3 (docs/counting.md).
func TestMessagesWrittenAfterATruncationCount(t *testing.T) {
	tool := func(id int, tu, status string) string {
		return fmt.Sprintf(`{"role":"user","messageId":%d,"content":[{"type":"tool_result","toolUseID":%q,"run":{"status":%q}}]}`, id, tu, status)
	}
	call := func(id int, tu string) string {
		return fmt.Sprintf(`{"role":"assistant","messageId":%d,"content":[{"type":"tool_use","id":%q,"name":"Bash","input":{}}],"state":%s,"usage":%s}`,
			id, tu, stToolUse, usageOf("m1", 10, 100))
	}
	first := []string{userMsg(0, "a"), call(1, "t1"), tool(2, "t1", "done"), assistantMsg(3, stEndTurn, usageOf("m1", 10, 100))}
	edited := []string{userMsg(4, "a, edited"), call(5, "t5"), tool(6, "t5", "done"), assistantMsg(7, stEndTurn, usageOf("m1", 10, 100))}
	for name, steps := range map[string][][]string{
		"truncated, then rewritten":       {first, first[:0], edited},
		"truncated and rewritten at once": {first, edited},
		"one exchange kept":               {append(first, userMsg(8, "b")), append(first[:1:1], edited...)},
	} {
		t.Run(name, func(t *testing.T) {
			s := newTestStore(0)
			for i, msgs := range steps {
				s.Apply("/d/T-1.json", FileVersion{Size: int64(i)}, summaryOf(t, threadDoc("T-1", "", msgs...)))
			}
			if got := sumType(s, "output"); got != 400 {
				t.Errorf("output tokens %d, want 400 (two exchanges of 200)", got)
			}
			if got := familySum(s, FamFinished); got != 4 {
				t.Errorf("finished messages %d, want 4", got)
			}
			if got := familySum(s, FamToolCalls); got != 2 {
				t.Errorf("tool calls %d, want 2", got)
			}
			wantPrompts := int64(2)
			if name == "one exchange kept" {
				wantPrompts = 3 // a, b, and the edited one
			}
			if got := familySum(s, FamPrompts); got < wantPrompts {
				t.Errorf("prompts %d, want %d", got, wantPrompts)
			}
		})
	}
}

// A summary kept past its parser's next parse (whose items that parse
// reused) is refused whole: counted neither from another thread's items nor
// from its totals by a weaker rule than its items' identities (counting
// rules: one rule, by item). Its thread counts when it is applied fresh.
func TestSummaryKeptPastTheNextParseIsRefused(t *testing.T) {
	p := thread.NewParser()
	parse := func(doc string) *thread.Summary {
		th, err := p.ParseBytes([]byte(doc))
		if err != nil {
			t.Fatal(err)
		}
		return thread.Summarize(th)
	}
	docA := threadDoc("T-a", "", userMsg(0, "a"), assistantMsg(1, stEndTurn, usageOf("m1", 10, 100)))
	a := parse(docA)
	b := parse(threadDoc("T-b", "", userMsg(0, "b"), assistantMsg(1, stEndTurn, usageOf("m2", 20, 200))))
	if a.ItemsValid() || !b.ItemsValid() {
		t.Fatalf("ItemsValid: a %v (reused), b %v", a.ItemsValid(), b.ItemsValid())
	}
	s := newTestStore(0)
	if s.Apply("/d/T-a.json", FileVersion{}, a) {
		t.Error("a stale summary was applied")
	}
	if got := familySum(s, FamTokens) + familySum(s, FamMessages); got != 0 {
		t.Errorf("a stale summary counted %d", got)
	}
	if !s.Apply("/d/T-a.json", FileVersion{}, parse(docA)) {
		t.Fatal("the fresh summary was not applied")
	}
	if got := series(s, FamTokens, "m1", "output"); got != 100 {
		t.Errorf("m1 output %d, want 100", got)
	}
	if got := series(s, FamTokens, "m2", "output"); got != 0 {
		t.Errorf("thread a counted thread b's items: m2 output %d", got)
	}
}

// Two files of one thread applied at once (two directories, two workers)
// share the thread's pins: the message counts once whichever pins it first.
func TestConcurrentAppliesOfOneThreadCountOnce(t *testing.T) {
	s := newTestStore(0)
	docs := []string{
		threadDoc("T-1", "", userMsg(0, "go"), assistantMsg(1, stToolUse, usageOf("m1", 10, 100))),
		threadDoc("T-1", "", userMsg(0, "go"), assistantMsg(1, stCancelled, usageOf("m2", 10, 100))),
	}
	var sums [2][]*thread.Summary
	for i, doc := range docs {
		for range 50 {
			sums[i] = append(sums[i], summaryOf(t, doc))
		}
	}
	done := make(chan struct{})
	for i := range docs {
		go func() {
			defer func() { done <- struct{}{} }()
			for j, sum := range sums[i] {
				s.Apply(fmt.Sprintf("/d%d/T-1.json", i), FileVersion{Size: int64(j)}, sum)
			}
		}()
	}
	<-done
	<-done
	if got := familySum(s, FamFinished); got != 1 {
		t.Errorf("one message counted %d times in amp_assistant_messages_total", got)
	}
	if got := sumType(s, "output"); got != 100 {
		t.Errorf("output tokens %d, want 100", got)
	}
}
