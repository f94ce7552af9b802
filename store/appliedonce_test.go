package store

import (
	"fmt"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/amp-exporter/amp-exporter/internal/threadgen"
	"github.com/amp-exporter/amp-exporter/parser/thread"
	"github.com/amp-exporter/amp-exporter/pricing"
)

// TestAppliedOnceCountsAsTheStore: a store that keeps no pins
// (AppliedOnce, a report's) counts a generated corpus, each thread applied
// once, to exactly the counters of every family and the ledger rows of a
// store that keeps them, with the label cap folding or not.
func TestAppliedOnceCountsAsTheStore(t *testing.T) {
	tab, err := pricing.Embedded(func() time.Time { return fixedNow })
	if err != nil {
		t.Fatal(err)
	}
	prices := pricing.New(tab, "genai-prices", "test", nil)
	g := threadgen.New(threadgen.Options{Threads: 30, TotalBytes: 2 << 20, Seed: 5})
	var sums []*thread.Summary
	for i := 0; i < g.Len(); i++ {
		_, data := g.Thread(i)
		th, err := thread.NewParser().ParseBytes(data)
		if err != nil {
			t.Fatal(err)
		}
		sums = append(sums, thread.Summarize(th))
	}
	for _, maxValues := range []int{100, 3} {
		t.Run(fmt.Sprint("max_label_values=", maxValues), func(t *testing.T) {
			kept := NewThreadStore(StoreOptions{MaxLabelValues: maxValues, Now: func() time.Time { return fixedNow }})
			once := NewThreadStore(StoreOptions{MaxLabelValues: maxValues, Now: func() time.Time { return fixedNow }, AppliedOnce: true})
			for _, s := range []*ThreadStore{kept, once} {
				s.SetPrices(prices)
				for i, sum := range sums {
					s.Apply(fmt.Sprintf("/d/T-%d.json", i), FileVersion{Size: 1}, sum)
				}
			}
			want, got := kept.Snapshot().Totals(), once.Snapshot().Totals()
			if len(want) < 20 {
				t.Fatalf("the corpus gives %d series: too few to show anything", len(want))
			}
			if !maps.Equal(got, want) {
				for k, v := range want {
					if got[k] != v {
						t.Errorf("%v: %d kept no pins, %d kept them", k, got[k], v)
					}
				}
				for k, v := range got {
					if _, ok := want[k]; !ok {
						t.Errorf("%v: %d kept no pins, none kept them", k, v)
					}
				}
			}
			if !slices.Equal(once.Ledger(), kept.Ledger()) {
				t.Error("the ledgers differ")
			}
			if pins, _ := once.PinBytes(); pins != 32*len(sums) {
				t.Errorf("the store keeps %d bytes of pins for %d threads, want none (%d of record headers)", pins, len(sums), 32*len(sums))
			}
		})
	}
}
