package store

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/amp-exporter/amp-exporter/internal/testsupport/threadgen"
	"github.com/amp-exporter/amp-exporter/parser/thread"
)

// The lines by model are the lines of the same calls as FamLines: an edit
// counted as done counts under the model that made it, folded by the label
// cap as the model label everywhere is; a rejected or failed edit counts
// nothing; a rewrite that names another model does not move the lines (the
// model is pinned with the call); and an edit pinned before lines were
// counted by model gets its model once.
func TestCounterLinesByModel(t *testing.T) {
	s := NewThreadStore(StoreOptions{MaxLabelValues: 3})
	items := []thread.Item{
		{Key: toolKey(1), Tool: "Edit", Status: "done", Lines: true, Added: 3, Removed: 2, Model: "opus"},
		{Key: toolKey(2), Tool: "Write", Status: "done", Lines: true, Added: 5, Model: "sonnet"},
		{Key: toolKey(3), Tool: "Write", Status: "rejected", Lines: true, Added: 9, Model: "opus"},
		{Key: toolKey(4), Tool: "Edit", Status: "error", Lines: true, Added: 4, Removed: 4, Model: "opus"},
		// No model named: unknown, as a message naming none.
		{Key: toolKey(6), Tool: "Edit", Status: "done", Lines: true, Added: 1},
		// A fourth model past the cap of three: folded.
		{Key: toolKey(5), Tool: "Edit", Status: "done", Lines: true, Added: 7, Removed: 1, Model: "gpt"},
	}
	count := func(base pinBlob, items ...thread.Item) counted {
		k := counterFor(s, nil, base, items...)
		return k.count(false)
	}
	res := count(nil, items...)
	want := map[SeriesKey]int64{
		{FamLinesByModel, "added", "opus", ""}:              3,
		{FamLinesByModel, "removed", "opus", ""}:            2,
		{FamLinesByModel, "added", "sonnet", ""}:            5,
		{FamLinesByModel, "added", OtherValue, ""}:          7,
		{FamLinesByModel, "removed", OtherValue, ""}:        1,
		{FamLinesByModel, "added", thread.UnknownModel, ""}: 1,
	}
	checkLinesByModel(t, "first count", res.series, want)

	// A rewrite names other models and turns the first call to an error:
	// its lines stay where they were counted.
	items[0].Model, items[0].Status = "sonnet", "error"
	items[1].Model = "opus"
	res = count(res.pins, items...)
	checkLinesByModel(t, "after a rewrite", res.series, want)

	// An edit pinned (done) by a version that kept no model in its pin.
	k := counterFor(s, nil, nil)
	k.pg.pin(&s.tuples, toolKey(1), pinTuple{name: "Edit", outcome: "done"})
	old := k.pg.result()
	res = count(old, items[0])
	checkLinesByModel(t, "an old pin", res.series, map[SeriesKey]int64{
		{FamLinesByModel, "added", "sonnet", ""}:   3,
		{FamLinesByModel, "removed", "sonnet", ""}: 2,
	})
	items[0].Model = "opus"
	res = count(res.pins, items[0])
	checkLinesByModel(t, "an old pin, rewritten", res.series, map[SeriesKey]int64{
		{FamLinesByModel, "added", "sonnet", ""}:   3,
		{FamLinesByModel, "removed", "sonnet", ""}: 2,
	})
}

// checkLinesByModel compares the FamLinesByModel series of got with want,
// and their sum with FamLines' sum.
func checkLinesByModel(t *testing.T, when string, got contribution, want map[SeriesKey]int64) {
	t.Helper()
	var byModel, lines int64
	for sk, v := range got {
		switch sk.Fam {
		case FamLinesByModel:
			byModel += v
			if want[sk] != v {
				t.Errorf("%s: %v = %d, want %d", when, sk, v, want[sk])
			}
		case FamLines:
			lines += v
		}
	}
	for sk, v := range want {
		if got[sk] != v {
			t.Errorf("%s: %v = %d, want %d", when, sk, got[sk], v)
		}
	}
	if byModel != lines {
		t.Errorf("%s: lines by model sum to %d, lines to %d", when, byModel, lines)
	}
}

// The model of an edit is the model of the assistant message that made
// the call, read from a thread file; the counts here are the fixture's
// lines, written out by hand.
func TestLinesByModelFromAThread(t *testing.T) {
	s := newTestStore(0)
	s.SetPrices(embeddedPrices(t))
	edit := func(id int, model, use, input, status string) string {
		return fmt.Sprintf(`{"role":"assistant","messageId":%d,"content":[{"type":"tool_use","id":%q,"name":"edit_file","complete":true,"input":%s}],"state":%s,"usage":%s}`,
			id, use, input, stToolUse, usageOf(model, 10, 100)) + "," +
			fmt.Sprintf(`{"role":"user","messageId":%d,"content":[{"type":"tool_result","toolUseID":%q,"run":{"status":%q}}]}`, id+1, use, status)
	}
	doc := threadDoc("T-1", "", userMsg(0, "go"),
		// 2 lines replaced by 3: 3 added, 2 removed.
		edit(1, "claude-sonnet-4-5-20250929", "tu1", `{"path":"a","old_str":"x\ny","new_str":"p\nq\nr"}`, "done"),
		// 1 line added after one kept: 1 added.
		edit(3, "claude-opus-4-6", "tu2", `{"path":"b","old_str":"k","new_str":"k\nn"}`, "done"),
		// Rejected: nothing.
		edit(5, "claude-opus-4-6", "tu3", `{"path":"c","old_str":"x","new_str":"y\nz"}`, "rejected"),
		assistantMsg(7, stEndTurn, usageOf("claude-opus-4-6", 1, 2)))
	s.Apply("/d/T-1.json", FileVersion{}, summaryOf(t, doc))
	got := contribution{}
	for sk, v := range s.Snapshot().totals {
		if sk.Fam == FamLinesByModel || sk.Fam == FamLines {
			got[sk] = v
		}
	}
	checkLinesByModel(t, "thread", got, map[SeriesKey]int64{
		{FamLinesByModel, "added", "claude-sonnet-4-5-20250929", ""}:   3,
		{FamLinesByModel, "removed", "claude-sonnet-4-5-20250929", ""}: 2,
		{FamLinesByModel, "added", "claude-opus-4-6", ""}:              1,
	})
}

// Over a generated corpus (edits by several models, some failed, rejected
// or cancelled, threads seen first as a prefix and then whole, twice), the
// lines by model sum to the lines, kind by kind.
func TestLinesByModelSumToLinesOverACorpus(t *testing.T) {
	s := newTestStore(0)
	p := thread.NewParser()
	rng := rand.New(rand.NewPCG(29, 3))
	var docs [][]string
	for range 60 {
		docs = append(docs, editThread(rng))
	}
	apply := func(i int, msgs []string) {
		data := threadDoc(fmt.Sprintf("T-%d", i), "", msgs...)
		th, err := p.ParseBytes([]byte(data))
		if err != nil {
			t.Fatal(err)
		}
		s.Apply(fmt.Sprintf("/d/T-%d.json", i), FileVersion{Size: int64(len(data))}, thread.Summarize(th))
	}
	for i, msgs := range docs {
		apply(i, msgs[:len(msgs)/2])
	}
	linesByKind(t, "prefixes", s)
	for range 2 {
		for i, msgs := range docs {
			apply(i, msgs)
		}
		linesByKind(t, "whole", s)
	}
}

// Over threadgen's corpus with known edits (every edit tool and era, in
// three repositories and none, by the generator's models), the lines by
// model sum to the lines, and both to the lines the generator wrote.
func TestLinesByModelOverThreadgen(t *testing.T) {
	g := threadgen.New(threadgen.Options{Threads: 80, TotalBytes: 80 * 30_000, Seed: 29, Repositories: 3, Edits: true,
		Start: time.Date(2026, 2, 2, 9, 0, 0, 0, time.UTC)})
	s := newTestStore(0)
	p := thread.NewParser()
	for i := range g.Len() {
		name, data := g.Thread(i)
		th, err := p.ParseBytes(data)
		if err != nil {
			t.Fatal(err)
		}
		s.Apply("/d/"+name, FileVersion{Size: int64(len(data))}, thread.Summarize(th))
	}
	got := linesByKind(t, "threadgen", s)
	want := map[string]int64{}
	for _, c := range g.Changes() {
		for k, v := range c.Lines {
			want[k.Kind] += v
		}
	}
	for _, kind := range []string{"added", "removed"} {
		if got[kind] != want[kind] {
			t.Errorf("%s: %d lines by model, the generator wrote %d", kind, got[kind], want[kind])
		}
	}
}

// linesByKind checks that the store's lines by model sum to its lines,
// kind by kind, over at least three models, and returns the sums.
func linesByKind(t *testing.T, when string, s *ThreadStore) map[string]int64 {
	t.Helper()
	byKind := map[string][2]int64{}
	models := map[string]bool{}
	for sk, v := range s.Snapshot().totals {
		c := byKind[sk.L1]
		switch sk.Fam {
		case FamLines:
			c[0] += v
		case FamLinesByModel:
			c[1] += v
			models[sk.L2] = true
		default:
			continue
		}
		byKind[sk.L1] = c
	}
	if byKind["added"][0] == 0 || byKind["removed"][0] == 0 || len(models) < 3 {
		t.Fatalf("%s: the corpus gives too little to compare: %v, models %v", when, byKind, models)
	}
	out := map[string]int64{}
	for kind, c := range byKind {
		if c[0] != c[1] {
			t.Errorf("%s: %s: lines %d, lines by model %d", when, kind, c[0], c[1])
		}
		out[kind] = c[1]
	}
	t.Logf("%s: %v over %d models", when, out, len(models))
	return out
}
