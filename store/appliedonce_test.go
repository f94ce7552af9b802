package store

import (
	"fmt"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/amp-exporter/amp-exporter/internal/testsupport/threadgen"
	"github.com/amp-exporter/amp-exporter/parser/thread"
	"github.com/amp-exporter/amp-exporter/pricing"
)

// TestAppliedOnceCountsAsTheStore: a store that keeps no pins
// (AppliedOnce, a report's) counts a generated corpus, each thread applied
// once, to exactly the counters of every family and the ledger rows of a
// store that keeps them, with the label cap folding or not.
func TestAppliedOnceCountsAsTheStore(t *testing.T) {
	prices, sums := generatedSummaries(t)
	for _, maxValues := range []int{100, 3} {
		t.Run(fmt.Sprint("max_label_values=", maxValues), func(t *testing.T) {
			kept := NewThreadStore(StoreOptions{MaxLabelValues: maxValues, Now: func() time.Time { return fixedNow }})
			once := NewThreadStore(StoreOptions{MaxLabelValues: maxValues, Now: func() time.Time { return fixedNow }, AppliedOnce: true})
			applyAll(prices, sums, kept, once)
			want, got := kept.Snapshot().Totals(), once.Snapshot().Totals()
			if len(want) < 20 {
				t.Fatalf("the corpus gives %d series: too few to show anything", len(want))
			}
			compareTotals(t, got, want, "kept no pins", "kept them")
			if !slices.Equal(once.Ledger(), kept.Ledger()) {
				t.Error("the ledgers differ")
			}
			if pins, _ := once.PinBytes(); pins != 32*len(sums) {
				t.Errorf("the store keeps %d bytes of pins for %d threads, want none (%d of record headers)", pins, len(sums), 32*len(sums))
			}
		})
	}
}

// generatedSummaries are the summaries of a generated corpus, and the
// embedded prices.
func generatedSummaries(t *testing.T) (Prices, []*thread.Summary) {
	t.Helper()
	tab, err := pricing.Embedded(func() time.Time { return fixedNow })
	if err != nil {
		t.Fatal(err)
	}
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
	return pricing.New(tab, "genai-prices", "test", nil), sums
}

// TestLedgerOnlyCountsTheLedgerAsTheStore: a store that counts only the
// ledger's families (LedgerOnly, a report's; with AppliedOnce as a report
// has it, and without) gives the ledger rows of a whole store and its
// counters of those families exactly, and no series of any other, with
// the label cap folding or not.
func TestLedgerOnlyCountsTheLedgerAsTheStore(t *testing.T) {
	prices, sums := generatedSummaries(t)
	// A thread whose first model is named by an edit: a cap of two folds
	// the models that come after it.
	sums = append([]*thread.Summary{thread.FromItems("T-edit-first", "smart", []thread.Item{
		{Key: toolKey(1), Tool: "Edit", Status: "done", Lines: true, Added: 3, Model: "edit-model"},
		spendMsg(2, "first-spender", ledgerT0, 100, 10, 0),
		spendMsg(3, "second-spender", ledgerT0, 200, 20, 0),
	})}, sums...)
	money := map[Family]bool{FamTokens: true, FamTokensLong: true, FamCredits: true, FamCost: true, FamUnpriced: true}
	for _, maxValues := range []int{100, 2} {
		for _, once := range []bool{true, false} {
			t.Run(fmt.Sprintf("max_label_values=%d,applied_once=%v", maxValues, once), func(t *testing.T) {
				opts := StoreOptions{MaxLabelValues: maxValues, Now: func() time.Time { return fixedNow }}
				whole := NewThreadStore(opts)
				opts.LedgerOnly, opts.AppliedOnce = true, once
				part := NewThreadStore(opts)
				applyAll(prices, sums, whole, part)
				want := maps.Clone(whole.Snapshot().Totals())
				maps.DeleteFunc(want, func(k SeriesKey, _ int64) bool { return !money[k.Fam] })
				got := part.Snapshot().Totals()
				if len(want) < 10 || len(got) == len(whole.Snapshot().Totals()) {
					t.Fatalf("%d series of the ledger's families of %d: the corpus shows nothing", len(want), len(got))
				}
				compareTotals(t, got, want, "counting the ledger alone", "counting all")
				if !slices.Equal(part.Ledger(), whole.Ledger()) {
					t.Error("the ledgers differ")
				}
			})
		}
	}
}

// applyAll applies each summary to each store, priced at prices.
func applyAll(prices Prices, sums []*thread.Summary, stores ...*ThreadStore) {
	for _, s := range stores {
		s.SetPrices(prices)
		for i, sum := range sums {
			s.Apply(fmt.Sprintf("/d/T-%d.json", i), FileVersion{Size: 1}, sum)
		}
	}
}

// compareTotals reports every series whose counter differs between got
// and want, each side named as the test calls it.
func compareTotals(t *testing.T, got, want map[SeriesKey]int64, gotName, wantName string) {
	t.Helper()
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%v: %d %s, %d %s", k, got[k], gotName, v, wantName)
		}
	}
	for k, v := range got {
		if _, ok := want[k]; !ok {
			t.Errorf("%v: %d %s, none %s", k, v, gotName, wantName)
		}
	}
}
