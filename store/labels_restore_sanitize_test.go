package store

import (
	"strings"
	"testing"
	"unicode"
)

// TestRestoredLabelValuesAreSanitized: a state saved before label values
// were sanitized (issue 19 saw model="bad\x00model") holds the raw values
// in its series and pins. Restored as they are, they would stay in the
// exposition for good, whatever the data says since; they are sanitized as
// they are read, like the admitted values already were.
func TestRestoredLabelValuesAreSanitized(t *testing.T) {
	const raw, clean = "bad\x00model", "bad\uFFFDmodel"
	dirty := func(v string) bool { return strings.IndexFunc(v, unicode.IsControl) >= 0 }

	streams := NewStreamStore(NewLabelCap(100, nil), nil)
	if err := streams.Import(&StreamState{Version: StateVersion,
		Series: []SeriesValue{{Family: string(FamTokens), L1: raw, L2: "input", Value: 5}}}); err != nil {
		t.Fatal(err)
	}
	for _, sv := range streams.Export().Series {
		if dirty(sv.L1) || dirty(sv.L2) {
			t.Errorf("stream series restored with %q", sv.L1+" "+sv.L2)
		}
	}

	threads := NewThreadStore(StoreOptions{})
	if _, err := threads.ImportThread("T-1", ThreadState{
		Series:  SeriesList{{Family: string(FamTokens), L1: raw, L2: "input", Value: 5}},
		Retired: []SeriesValue{{Family: string(FamTokens), L1: raw, L2: "output", Value: 1}},
	}); err != nil {
		t.Fatal(err)
	}
	for k := range threads.totals {
		if dirty(k.L1) || dirty(k.L2) {
			t.Errorf("thread series restored with %q", k.L1+" "+k.L2)
		}
	}
	if threads.totals[SeriesKey{FamTokens, clean, "input", ""}] != 5 {
		t.Errorf("totals %v, want 5 under %q", threads.totals, clean)
	}

	pins := &PinState{Strings: []string{raw}, Tuples: []byte{2, 1, 0}}
	tuples, err := pins.tuples()
	if err != nil {
		t.Fatal(err)
	}
	if len(tuples) != 1 || tuples[0].name != clean || tuples[0].outcome != clean {
		t.Errorf("pins restored as %+v, want %q", tuples, clean)
	}
}
