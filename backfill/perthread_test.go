package backfill

import (
	"maps"
	"sync"
	"testing"
	"time"

	"github.com/amp-exporter/amp-exporter/internal/testsupport/threadgen"
	"github.com/amp-exporter/amp-exporter/parser/thread"
	"github.com/amp-exporter/amp-exporter/pricing"
	"github.com/amp-exporter/amp-exporter/store"
)

// TestBucketsStartAtTheItem: with Buckets, an item's growth is at the
// start of the step its time falls in, an item stamped exactly on a
// boundary in the step it opens (without Buckets, in the sample that
// closes the step before: the sample at T counts what happened up to T).
func TestBucketsStartAtTheItem(t *testing.T) {
	p := thread.NewParser()
	data := doc("T-1", base+1000, []msg{
		{sent: base + 60_000, at: base + 120_000, input: 100, output: 10}, // bucket base
		{sent: base + 4*60_000, at: base + min5, input: 200, output: 20},  // exactly base+5m: bucket base+5m
	})
	for _, tc := range []struct {
		buckets bool
		want    map[int64]int64 // input tokens by growth time
	}{
		{true, map[int64]int64{base: 100, base + min5: 200}},
		{false, map[int64]int64{base + min5: 300}},
	} {
		var got []ThreadGrowth
		b, err := New(Options{Until: time.UnixMilli(base + 60*60_000), Prices: prices(), Buckets: tc.buckets,
			PerThread: func(g ThreadGrowth) { got = append(got, g) }})
		if err != nil {
			t.Fatal(err)
		}
		if err := b.AddThread(store.SourceThreads, "/d/T-1.json", summarize(t, p, data)); err != nil {
			t.Fatal(err)
		}
		if len(got) != 1 || got[0].ID != "T-1" || got[0].Source != store.SourceThreads {
			t.Fatalf("buckets=%v: PerThread got %+v, want one call for T-1", tc.buckets, got)
		}
		input := map[int64]int64{}
		for _, g := range got[0].Growth {
			if g.Key.Fam == store.FamTokens && g.Key.L2 == "input" {
				input[g.At] += g.V
			}
		}
		if !maps.Equal(input, tc.want) {
			t.Errorf("buckets=%v: input tokens by time %v, want %v", tc.buckets, input, tc.want)
		}
		if s := b.Series(b.Range(time.Time{})); len(s) != 0 {
			t.Errorf("buckets=%v: %d series merged although PerThread takes the growths", tc.buckets, len(s))
		}
	}
}

// TestPerThreadSumsAreLiveValues: over a generated corpus, the per-thread
// growths in 15-minute buckets add up, per series, to what the live
// exporter's store counts from the same threads (the usage report's
// ledger equals the counters).
func TestPerThreadSumsAreLiveValues(t *testing.T) {
	for _, seed := range []int64{1, 2, 3} {
		g := threadgen.New(threadgen.Options{Threads: 30, TotalBytes: 3_000_000, Seed: seed})
		pr, err := pricing.Embedded(nil)
		if err != nil {
			t.Fatal(err)
		}
		prices := pricing.New(pr, "genai-prices", pr.Version, nil)
		var mu sync.Mutex
		sums := map[store.SeriesKey]int64{}
		b, err := New(Options{Until: time.Now(), Step: 15 * time.Minute, Buckets: true, Prices: prices,
			PerThread: func(tg ThreadGrowth) {
				mu.Lock()
				defer mu.Unlock()
				for _, g := range tg.Growth {
					if g.At%(15*60_000) != 0 {
						t.Errorf("growth at %d: not the start of a 15-minute bucket", g.At)
					}
					sums[g.Key] += g.V
				}
			}})
		if err != nil {
			t.Fatal(err)
		}
		live := store.NewThreadStore(store.StoreOptions{})
		live.SetPrices(prices)
		p := thread.NewParser()
		for i := range g.Len() {
			name, data := g.Thread(i)
			live.Apply(name, store.FileVersion{Size: int64(len(data))}, summarize(t, p, data))
			if err := b.AddThread(store.SourceThreads, name, summarize(t, p, data)); err != nil {
				t.Fatal(err)
			}
		}
		want := map[store.SeriesKey]int64{}
		for k, v := range live.Snapshot().Totals() {
			if famIndex(k.Fam) >= 0 && v > 0 {
				want[k] = v
			}
		}
		if !maps.Equal(sums, want) {
			for k, v := range want {
				if sums[k] != v {
					t.Errorf("seed %d: %v: per-thread growths add up to %d, the live store counts %d", seed, k, sums[k], v)
				}
			}
			for k, v := range sums {
				if _, ok := want[k]; !ok {
					t.Errorf("seed %d: %v: %d in the growths, not in the live store", seed, k, v)
				}
			}
		}
		if len(want) < 10 {
			t.Errorf("seed %d: only %d series: the corpus does not exercise it", seed, len(want))
		}
	}
}
