package store

import (
	"fmt"
	"strings"
	"testing"

	"github.com/amp-exporter/amp-exporter/parser/thread"
)

// TestLabelCapUntrustedCannotEvictOwnData: an unauthenticated source (100
// junk model names posted to ingest in issue 10) fills at most its own
// quota; the user's own models still get their series.
func TestLabelCapUntrustedCannotEvictOwnData(t *testing.T) {
	folds := 0
	c := NewLabelCap(100, func(string) { folds++ })
	for i := range 100 {
		c.valueUntrusted("model", fmt.Sprintf("junk-%d", i))
	}
	for i := range 100 {
		m := fmt.Sprintf("real-model-%d", i)
		if got := c.value("model", m); got != m {
			t.Fatalf("the user's model %d folded into %q after an untrusted source filled the cap", i, got)
		}
	}
	if got := c.value("model", "real-model-100"); got != OtherValue {
		t.Errorf("the cap no longer applies to the user's data: %q", got)
	}
	if folds != 51 {
		t.Errorf("%d folds counted, want 50 untrusted + 1", folds)
	}
	// A value the user's data shares with the untrusted source is the user's.
	c2 := NewLabelCap(2, nil)
	c2.valueUntrusted("model", "shared")
	c2.value("model", "shared")
	c2.value("model", "mine")
	if got := c2.value("model", "third"); got != OtherValue {
		t.Errorf("cap 2: third value %q", got)
	}
	// The split survives a restart.
	c3 := NewLabelCap(100, nil)
	c3.restore(c.export())
	if got := c3.valueUntrusted("model", "junk-new"); got != OtherValue {
		t.Errorf("after restore the untrusted quota is free again: %q", got)
	}
	if got := c3.value("model", "real-model-0"); got != "real-model-0" {
		t.Errorf("after restore: %q", got)
	}
}

// TestFoldedValuesCountedOncePastTheTrackedLimit: issue 10 saw 1.99e6 folds
// counted for 999,900 names (each fold counted again past 10k tracked).
// Every distinct folded value counts once, whatever how many there are.
// Counting rule 9 (docs/counting.md).
func TestFoldedValuesCountedOncePastTheTrackedLimit(t *testing.T) {
	folds := 0
	c := NewLabelCap(100, func(string) { folds++ })
	const names = 150_000 // past the exact set: the Bloom filter decides
	for round := range 2 {
		for i := range names + 100 {
			c.value("model", fmt.Sprintf("model-%07d", i))
		}
		if folds > names || folds < names*99/100 {
			t.Fatalf("round %d: %d folds counted for %d distinct folded names", round, folds, names)
		}
	}
	// Values folded by a parser count once with those folded here.
	before := folds
	c.FoldedElsewhere("model", []uint64{LabelHash("model-0000500"), LabelHash("never-seen")})
	if folds != before+1 {
		t.Errorf("FoldedElsewhere counted %d, want 1", folds-before)
	}
}

// TestThreadFileFoldsCountedOnce: a thread naming 3,000 models, applied
// twice (a rewrite): each distinct folded name is counted once, whether the
// parser's per-file budget or the label cap folded it.
func TestThreadFileFoldsCountedOnce(t *testing.T) {
	var b strings.Builder
	b.WriteString(`{"v":1,"id":"T-00000000-0000-4000-8000-000000000002","created":1768178184664,"messages":[`)
	const n = 3000
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"role":"assistant","messageId":%d,"content":[],"state":{"type":"complete","stopReason":"end_turn"},"usage":{"model":"m-%05d","inputTokens":1,"outputTokens":1}}`, i, i)
	}
	b.WriteString(`]}`)
	folds := 0
	s := NewThreadStore(StoreOptions{Labels: NewLabelCap(100, func(string) { folds++ })})
	for range 2 {
		th, err := thread.NewParser().ParseBytes([]byte(b.String()))
		if err != nil {
			t.Fatal(err)
		}
		s.Apply("/t/T-2.json", FileVersion{}, thread.Summarize(th))
	}
	if folds != n-100 {
		t.Errorf("%d folds counted for %d distinct folded names", folds, n-100)
	}
}

// TestParserFoldsHashLikeTheCap: a name the thread parser's per-file budget
// folds and the same name folded here (from another file or source) are one
// distinct folded value, also when the name is cut (past the length limit,
// mid-rune) or empty (read as "unknown").
func TestParserFoldsHashLikeTheCap(t *testing.T) {
	long := strings.Repeat("a", maxLabelLength-1) + "é" // the cut falls inside é
	var b strings.Builder
	b.WriteString(`{"v":1,"id":"T-00000000-0000-4000-8000-000000000003","created":1768178184664,"messages":[`)
	models := make([]string, 0, thread.MaxModelsPerFile+2)
	for i := range thread.MaxModelsPerFile {
		models = append(models, fmt.Sprintf("m-%05d", i))
	}
	models = append(models, long, "")
	for i, m := range models {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"role":"assistant","messageId":%d,"content":[],"state":{"type":"complete","stopReason":"end_turn"},"usage":{"model":%q,"inputTokens":1,"outputTokens":1}}`, i, m)
	}
	b.WriteString(`]}`)
	folds := 0
	labels := NewLabelCap(100, func(string) { folds++ })
	s := NewThreadStore(StoreOptions{Labels: labels})
	th, err := thread.NewParser().ParseBytes([]byte(b.String()))
	if err != nil {
		t.Fatal(err)
	}
	if len(th.FoldedModels) != 2 {
		t.Fatalf("the parser folded %d names, want 2 (the long one and the empty one)", len(th.FoldedModels))
	}
	s.Apply("/t/T-3.json", FileVersion{}, thread.Summarize(th))
	want := thread.MaxModelsPerFile - 100 + 2
	if folds != want {
		t.Fatalf("%d folds counted, want %d", folds, want)
	}
	for _, m := range []string{long, ""} {
		if got := labels.value("model", m); got != OtherValue {
			t.Fatalf("value(%q) = %q with the cap full", m, got)
		}
	}
	if folds != want {
		t.Errorf("%d folds counted after the same names were folded by the cap, want %d: one name counted twice", folds, want)
	}
}

// "other" is where values past the cap go, not a value that needs a place:
// an unauthenticated source that sends it (or a value sanitized into it)
// must not take one of the user's places, and neither does the user's own
// data, across a restart too.
func TestOtherTakesNoPlaceInTheCap(t *testing.T) {
	for _, tc := range []struct {
		name string
		send func(c *LabelCap) string
	}{
		{"untrusted", func(c *LabelCap) string { return c.valueUntrusted("model", OtherValue) }},
		{"trusted", func(c *LabelCap) string { return c.value("model", OtherValue) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := NewLabelCap(2, nil)
			if got := tc.send(c); got != OtherValue {
				t.Fatalf("other became %q", got)
			}
			restored := NewLabelCap(2, nil)
			restored.restore(c.export())
			for _, c := range []*LabelCap{c, restored} {
				for _, m := range []string{"mine-1", "mine-2"} {
					if got := c.value("model", m); got != m {
						t.Errorf("the user's model %q folded into %q: other took one of the 2 places", m, got)
					}
				}
				if got := c.value("model", "mine-3"); got != OtherValue {
					t.Errorf("a third model kept %q past the cap of 2", got)
				}
			}
		})
	}
	// A state of an earlier version that admitted it.
	old := NewLabelCap(2, nil)
	old.restore(map[string][]string{"model": {OtherValue}, untrustedPrefix + "model": {OtherValue}})
	if old.value("model", "mine-1") != "mine-1" || old.value("model", "mine-2") != "mine-2" {
		t.Error("a restored \"other\" took one of the user's places")
	}
	// Nor does it use the untrusted quota.
	c := NewLabelCap(4, nil)
	c.valueUntrusted("model", OtherValue)
	for _, m := range []string{"junk-1", "junk-2"} {
		if got := c.valueUntrusted("model", m); got != m {
			t.Errorf("untrusted %q folded into %q: other used the quota of 2", m, got)
		}
	}
}
