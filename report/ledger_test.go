package report

import (
	"cmp"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/amp-exporter/amp-exporter/ledger"
)

// TestEntriesMergeSortedAndAdded: a ledger given a sorted list whole
// (AddSorted, a store's ledger) and entries one by one (Add, the server's
// threads) hands out what adding every entry one by one gives: one entry
// per bucket, thread, model and repository, the same keys added up, in
// the order of time, thread, model and repository.
func TestEntriesMergeSortedAndAdded(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 8))
	pick := func(vs ...string) string { return vs[rng.IntN(len(vs))] }
	entry := func() Entry {
		return Entry{Start: int64(rng.IntN(6)) * ledger.BucketMs, Session: pick("T-a", "T-b", "T-c"),
			Model: pick("m1", "m2"), Repo: pick("", "github.com/o/r"),
			Usage: Usage{Input: rng.Int64N(100), Output: rng.Int64N(100), Credits: rng.Int64N(9), Cost: rng.Int64N(1000)}}
	}
	for round := range 200 {
		t.Run(fmt.Sprint(round), func(t *testing.T) {
			want := NewLedger()
			got := NewLedger()
			// addRandom adds n random entries to want and to l.
			addRandom := func(n int, l *Ledger) {
				for range n {
					e := entry()
					l.Add(e)
					want.Add(e)
				}
			}
			// A sorted list with one entry per key, as a store gives it.
			sorted := NewLedger()
			addRandom(rng.IntN(30), sorted)
			got.AddSorted(sorted.Entries())
			addRandom(rng.IntN(30), got)
			if round%3 == 0 { // a second sorted list merges too
				second := NewLedger()
				addRandom(rng.IntN(10), second)
				got.AddSorted(second.Entries())
			}
			w, g := want.Entries(), got.Entries()
			if !slices.Equal(w, g) {
				t.Fatalf("entries:\n got %v\nwant %v", g, w)
			}
			if !slices.IsSortedFunc(g, func(a, b Entry) int {
				return cmp.Or(cmp.Compare(a.Start, b.Start), cmp.Compare(a.Session, b.Session), cmp.Compare(a.Model, b.Model), cmp.Compare(a.Repo, b.Repo))
			}) {
				t.Fatal("entries out of order")
			}
			for i := 1; i < len(g); i++ {
				if a, b := g[i-1], g[i]; a.Start == b.Start && a.Session == b.Session && a.Model == b.Model && a.Repo == b.Repo {
					t.Fatalf("two entries of one key: %v", g[i])
				}
			}
		})
	}
}
