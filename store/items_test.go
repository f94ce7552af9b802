package store

import (
	"testing"

	"github.com/amp-exporter/amp-exporter/parser/thread"
	"github.com/amp-exporter/amp-exporter/pricing"
)

// The steps of itemCounter, each run alone on a summary made for it.

func msgKey(id uint64) uint64  { return thread.ItemKey(thread.ItemMessage, id) }
func toolKey(id uint64) uint64 { return thread.ItemKey(thread.ItemTool, id) }

func counterFor(s *ThreadStore, prices Prices, base pinBlob, items ...thread.Item) itemCounter {
	return newItemCounter(s, thread.FromItems("T-1", "smart", items), prices, base)
}

// spend splits an item's tokens at its long-context part and prices each
// part at its tier: $3 and $6 a million input tokens are 30,000 and 60,000
// units of 1e-10 USD a token. A model without prices adds its tokens up
// as unpriced.
func TestCounterSpendPricesEachTier(t *testing.T) {
	prices := pricing.New(nil, "test", "1", map[string]pricing.Price{
		"m": {Input: 3, Output: 15, Long: &pricing.Price{Input: 6, Output: 22.5}},
	})
	k := counterFor(NewThreadStore(StoreOptions{}), prices, nil)
	var a spendAcc
	k.spend(&a, &thread.Item{Model: "m", Tokens: thread.Tokens{Input: 100}, Over: thread.Tokens{Input: 30},
		Credits: 1.5, HasCredits: true})
	if a.tokens[0] != 100 || a.long[0] != 30 {
		t.Errorf("tokens %d, long %d; want 100, 30", a.tokens[0], a.long[0])
	}
	if a.stdCost[0] != 70*30_000 || a.longCost[0] != 30*60_000 {
		t.Errorf("costs %d, %d; want %d, %d", a.stdCost[0], a.longCost[0], 70*30_000, 30*60_000)
	}
	if !a.hasCredits || a.credits != 1.5 || a.unpriced != [4]int64{} {
		t.Errorf("credits %v %v, unpriced %v", a.hasCredits, a.credits, a.unpriced)
	}
	var b spendAcc
	k.spend(&b, &thread.Item{Model: "not-priced", Tokens: thread.Tokens{Output: 7}})
	if b.unpriced[1] != 7 || b.stdCost != [4]int64{} {
		t.Errorf("unpriced %v, cost %v; want 7 output tokens unpriced, no cost", b.unpriced, b.stdCost)
	}
	if len(k.units) != 2 {
		t.Errorf("%d models looked up, want 2", len(k.units))
	}
}

// countMessage counts users, prompts, assistants, and finished assistant
// messages without usage; a moving one without usage is not counted yet.
func TestCounterCountMessage(t *testing.T) {
	k := counterFor(NewThreadStore(StoreOptions{}), nil, nil)
	for _, it := range []thread.Item{
		{Key: msgKey(1), Role: thread.RoleUser, Prompt: true},
		{Key: msgKey(2), Role: thread.RoleUser},
		{Key: msgKey(3), Role: thread.RoleAssistant, NoUsage: true, StopReason: "end_turn"},
		{Key: msgKey(4), Role: thread.RoleAssistant, NoUsage: true},
		{Key: toolKey(5), Tool: "Bash", Status: "done"},
	} {
		k.countMessage(&it)
	}
	if want := (messageCounts{users: 2, prompts: 1, assistants: 2, noUsage: 1}); k.msgs != want {
		t.Errorf("counts %+v, want %+v", k.msgs, want)
	}
}

// pinItem: an assistant message naming no model and still moving waits
// (pinned to no labels, adds nothing); once it names one it is pinned to
// it, and a later snapshot naming another model keeps the first, while a
// stop reason seen for the first time is added.
func TestCounterPinItemKeepsFirstLabels(t *testing.T) {
	s := NewThreadStore(StoreOptions{})
	moving := thread.Item{Key: msgKey(1), Role: thread.RoleAssistant}
	k := counterFor(s, nil, nil, moving)
	if _, _, ok := k.pinItem(&moving, 0, pinTuple{}); ok {
		t.Fatal("a moving message naming no model was counted")
	}
	if n, _ := k.pg.lookup(moving.Key); n == 0 || k.pg.tuple(n) != (pinTuple{}) {
		t.Fatal("the moving message was not pinned to no labels")
	}

	named := thread.Item{Key: msgKey(1), Role: thread.RoleAssistant, Model: "m1"}
	k = counterFor(s, nil, nil, named)
	n, tu, ok := k.pinItem(&named, 0, pinTuple{})
	if !ok || n == 0 || tu != (pinTuple{name: "m1"}) {
		t.Fatalf("pinItem = %d, %+v, %v; want pinned to m1", n, tu, ok)
	}
	pins := k.pg.result()

	later := thread.Item{Key: msgKey(1), Role: thread.RoleAssistant, Model: "m2", StopReason: "end_turn"}
	k = counterFor(s, nil, pins, later)
	n, _ = k.pg.lookup(later.Key)
	_, tu, ok = k.pinItem(&later, n, k.pg.tuple(n))
	if !ok || tu != (pinTuple{name: "m1", outcome: "end_turn"}) {
		t.Errorf("later snapshot pinned to %+v (ok %v), want m1 with end_turn", tu, ok)
	}
	k.pg.result()
}

// addItem adds items pinned to one tuple to that tuple's sums, and flush
// turns the sums into one series per tuple.
func TestCounterAddItemAndFlush(t *testing.T) {
	s := NewThreadStore(StoreOptions{})
	items := []thread.Item{
		{Key: toolKey(1), Tool: "Bash", Status: "done"},
		{Key: toolKey(2), Tool: "Bash", Status: "done"},
		{Key: toolKey(3), Tool: "Read", Status: "error"},
	}
	k := counterFor(s, nil, nil, items...)
	k.pass(true, nil) // sets up the sums; then add one more by hand
	if got := k.series[SeriesKey{FamToolCalls, "Bash", "done", ""}]; got != 2 {
		t.Fatalf("pass: Bash done %d, want 2", got)
	}
	clear(k.series)
	n, _ := k.pg.lookup(items[0].Key)
	k.addItem(&items[0], n, k.pg.tuple(n))
	if len(k.series) != 0 {
		t.Errorf("addItem wrote series %v before flush", k.series)
	}
	k.flush()
	if got := k.series[SeriesKey{FamToolCalls, "Bash", "done", ""}]; got != 3 {
		t.Errorf("flush: Bash done %d, want 3 (the pass's 2 and one more)", got)
	}
	if got := k.series[SeriesKey{FamToolCalls, "Read", "error", ""}]; got != 1 {
		t.Errorf("flush: Read error %d, want 1", got)
	}
	k.pg.result()
}

// missing sees an item pinned before that the snapshot lacks; count takes
// it for vanished only in a whole snapshot, and then retires it and gives
// the new items' share apart.
func TestCounterMissingAndFreshShare(t *testing.T) {
	s := NewThreadStore(StoreOptions{})
	first := []thread.Item{
		{Key: msgKey(1), Role: thread.RoleUser, Prompt: true},
		{Key: toolKey(2), Tool: "Bash", Status: "done"},
	}
	k := counterFor(s, nil, nil, first...)
	base := k.count(false).pins

	next := []thread.Item{
		{Key: msgKey(1), Role: thread.RoleUser, Prompt: true},
		{Key: toolKey(3), Tool: "Read", Status: "done"},
	}
	k = counterFor(s, nil, base, next...)
	k.pass(true, nil)
	if !k.missing() {
		t.Fatal("missing: the tool result that left was not seen")
	}
	k.pg.result()

	partial := counterFor(s, nil, base, next...)
	if res := partial.count(true); res.vanished {
		t.Error("a partial snapshot took an item for vanished")
	}
	whole := counterFor(s, nil, base, next...)
	res := whole.count(false)
	if !res.vanished || res.reidentified {
		t.Fatalf("vanished %v, reidentified %v; want true, false", res.vanished, res.reidentified)
	}
	want := contribution{{FamToolCalls, "Read", "done", ""}: 1}
	if len(res.fresh) != len(want) || res.fresh[SeriesKey{FamToolCalls, "Read", "done", ""}] != 1 {
		t.Errorf("fresh share %v, want %v", res.fresh, want)
	}
	if res.series[SeriesKey{FamPrompts, "", "", ""}] != 1 || res.series[SeriesKey{FamToolCalls, "Read", "done", ""}] != 1 {
		t.Errorf("series %v: want the whole snapshot's", res.series)
	}
	// The item that left is pinned to count nothing from now on.
	k = counterFor(s, nil, res.pins, first...)
	if n, _ := k.pg.lookup(toolKey(2)); n == 0 || !k.pg.tuple(n).none {
		t.Error("the vanished item is not pinned to count nothing")
	}
	k.pg.result()
}

// fold gives the label cap's value and asks the cap once per raw value.
func TestCounterFoldAsksTheCapOnce(t *testing.T) {
	folds := 0
	s := NewThreadStore(StoreOptions{MaxLabelValues: 1, OnFold: func(string) { folds++ }})
	k := counterFor(s, nil, nil)
	if got := k.fold("model", "a"); got != "a" {
		t.Errorf("fold(a) = %q", got)
	}
	for range 3 {
		if got := k.fold("model", "b"); got != OtherValue {
			t.Errorf("fold(b) = %q, want %q", got, OtherValue)
		}
	}
	if len(k.folds) != 2 || folds != 1 {
		t.Errorf("%d values remembered, %d folds counted; want 2, 1", len(k.folds), folds)
	}
	k.pg.result()
}

// Lines count for an edit call counted as done, under the tool it was
// pinned to, and still once its status turns to error in a rewrite (the
// pinned status stays done); shell commands count by outcome.
func TestCounterLinesAndShellCommands(t *testing.T) {
	s := NewThreadStore(StoreOptions{})
	items := []thread.Item{
		{Key: toolKey(1), Tool: "Edit", Status: "done", Lines: true, Added: 3, Removed: 2},
		{Key: toolKey(2), Tool: "Write", Status: "rejected", Lines: true, Added: 9},
		{Key: toolKey(3), Tool: "Bash", Status: "done", Shell: thread.ShellFailure},
	}
	k := counterFor(s, nil, nil, items...)
	res := k.count(false)
	want := map[SeriesKey]int64{
		{FamLines, "added", "Edit", ""}:                 3,
		{FamLines, "removed", "Edit", ""}:               2,
		{FamShellCommands, thread.ShellFailure, "", ""}: 1,
	}
	for sk, v := range want {
		if got := res.series[sk]; got != v {
			t.Errorf("%v = %d, want %d", sk, got, v)
		}
	}
	if got := res.series[SeriesKey{FamLines, "added", "Write", ""}]; got != 0 {
		t.Errorf("a rejected create counted %d lines", got)
	}
	items[0].Status = "error"
	k = counterFor(s, nil, res.pins, items...)
	res = k.count(false)
	if got := res.series[SeriesKey{FamLines, "added", "Edit", ""}]; got != 3 {
		t.Errorf("after the rewrite: Edit added %d, want 3 (pinned done)", got)
	}
}

// An edit call whose lines the parse left uncounted (its diff past the
// parse's budget) counts once under its reason when done, and no lines; a
// rejected one counts nothing.
func TestCounterLinesUncounted(t *testing.T) {
	s := NewThreadStore(StoreOptions{})
	items := []thread.Item{
		{Key: toolKey(1), Tool: "Edit", Status: "done", Lines: true, Added: 3, Removed: 2},
		{Key: toolKey(2), Tool: "Edit", Status: "done", Uncounted: thread.UncountedDiffBudget},
		{Key: toolKey(3), Tool: "Edit", Status: "done", Uncounted: thread.UncountedDiffBudget},
		{Key: toolKey(4), Tool: "Edit", Status: "rejected", Uncounted: thread.UncountedDiffBudget},
	}
	k := counterFor(s, nil, nil, items...)
	res := k.count(false)
	want := map[SeriesKey]int64{
		{FamLines, "added", "Edit", ""}:                         3,
		{FamLines, "removed", "Edit", ""}:                       2,
		{FamLinesUncounted, thread.UncountedDiffBudget, "", ""}: 2,
	}
	for sk, v := range want {
		if got := res.series[sk]; got != v {
			t.Errorf("%v = %d, want %d", sk, got, v)
		}
	}
	for sk, v := range res.series {
		if _, ok := want[sk]; !ok && (sk.Fam == FamLines || sk.Fam == FamLinesUncounted) {
			t.Errorf("%v = %d, want none", sk, v)
		}
	}
}
