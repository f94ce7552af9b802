package store

import (
	"testing"

	"github.com/amp-exporter/amp-exporter/internal/testsupport/threadtest"
)

func billedTotal(s *ThreadStore) float64 {
	var usd float64
	for k, v := range s.Snapshot().Totals() {
		if k.Fam == FamBilled {
			usd += Unfixed(FamBilled, v)
		}
	}
	return usd
}

// The bill of a thread another source counts is kept under a key of its
// own, saved with the state (where it was read, too), shown in no
// amp_threads, and never gives the thread to the server when the owners
// are seeded from the store's keys.
func TestOthersBillKeptAndRestored(t *testing.T) {
	s := newTestStore(0)
	at := FileVersion{AmpServerV: 3, AmpServerCount: 4, AmpServerLast: 5}
	if !s.ApplyOthersBill("T-a", map[string]float64{"paid": 1.25}, at, "") {
		t.Fatal("bill not counted")
	}
	if s.ApplyOthersBill("T-a", map[string]float64{"paid": 1.25}, at, "") {
		t.Fatal("the same bill counted twice")
	}
	if got := billedTotal(s); got != 1.25 {
		t.Fatalf("billed %v", got)
	}
	if n := s.PresentThreads(); n != 0 {
		t.Fatalf("a kept bill shows %d threads", n)
	}
	o := NewOwners()
	o.Seed(SourceAmpServer, s.ThreadKeys())
	if got := o.Owner("T-a"); got != "" {
		t.Fatalf("seeding from the server store's keys gave the thread to %q", got)
	}
	// Saved by a delta and restored: the bill and where it was read.
	restored := newTestStore(0)
	if err := s.ExportDelta().EachThread(func(key string, ts ThreadState) error {
		_, err := restored.ImportThread(key, ts)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if got, ok := restored.BilledAt("T-a"); !ok || got != at {
		t.Fatalf("restored billed at %+v %v, want %+v", got, ok, at)
	}
	if got := billedTotal(restored); got != 1.25 {
		t.Fatalf("restored billed %v", got)
	}
	// ApplyBilled (a bill read again, the entitlement) reaches it too.
	if !restored.ApplyBilled("T-a", map[string]float64{"paid": 1.5}) || billedTotal(restored) != 1.5 {
		t.Fatalf("billed %v after the bill grew to 1.5", billedTotal(restored))
	}
}

// A thread whose bill was kept while another source counted it and that
// the server then counts itself (the local record lost with a damaged
// state) is billed once: its bill is the sum of both records.
func TestOthersBillThenCountedBilledOnce(t *testing.T) {
	s := newTestStore(0)
	s.ApplyOthersBill("T-a", map[string]float64{"free": 0.5, "paid": 1}, FileVersion{AmpServerV: 1}, "")
	s.Apply(AmpServerPath("T-a"), FileVersion{AmpServerV: 2}, threadtest.Summary(threadtest.Thread{ID: "T-a", Users: 1, Prompts: 1}))
	if s.ApplyBilled("T-a", map[string]float64{"free": 0.5, "paid": 1}) {
		t.Fatal("a bill counted again")
	}
	s.ApplyBilled("T-a", map[string]float64{"free": 0.5, "paid": 2})
	if got := billedTotal(s); got != 2.5 {
		t.Fatalf("billed %v, want 2.5", got)
	}
}
