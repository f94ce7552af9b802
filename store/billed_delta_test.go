package store

import (
	"testing"

	"github.com/amp-exporter/amp-exporter/internal/testsupport/threadtest"
	"github.com/amp-exporter/amp-exporter/parser/thread"
)

// A delta is a snapshot: a bill applied after ExportDelta returned (the
// syncer bills right after it counts, while the state keeper may be
// encoding the delta without the store's lock) must not change, or tear,
// the contribution the delta holds. ApplyBilled used to update the
// record's series in place, shared with the delta's copy: a series could
// then be written twice and another dropped, and the restored thread
// (ImportThread sums a series listed twice) counted wrong.
func TestBillAfterExportDeltaLeavesTheDeltaAlone(t *testing.T) {
	s := newTestStore(0)
	sum := func(id, model string) *thread.Summary {
		return threadtest.Summary(threadtest.Thread{ID: id, Users: 1, Prompts: 1,
			Tokens: map[string]thread.Tokens{model: {Input: 10, Output: 5}}})
	}
	// The billed "free" series is numbered before thread B's series, so a
	// bill of B inserts it in front of them.
	s.Apply(AmpServerPath("T-a"), FileVersion{AmpServerV: 1}, sum("T-a", "m1"))
	s.ApplyBilled("T-a", map[string]float64{"free": 1})
	s.Apply(AmpServerPath("T-b"), FileVersion{AmpServerV: 1}, sum("T-b", "m2"))
	s.ApplyBilled("T-b", map[string]float64{"paid": 1})
	d := s.ExportDelta()
	before := deltaSeries(t, d)
	s.ApplyBilled("T-b", map[string]float64{"free": 2, "paid": 3})
	after := deltaSeries(t, d)
	for key, b := range before {
		a := after[key]
		if len(a) != len(b) {
			t.Fatalf("%s: the delta changed under a later bill: %v, then %v", key, b, a)
		}
		for i := range b {
			if a[i] != b[i] {
				t.Fatalf("%s: the delta changed under a later bill: %v, then %v", key, b, a)
			}
		}
	}
}

func deltaSeries(t *testing.T, d *ThreadDelta) map[string]SeriesList {
	t.Helper()
	out := map[string]SeriesList{}
	if err := d.EachThread(func(key string, ts ThreadState) error {
		out[key] = ts.Series
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return out
}
