package store

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/amp-exporter/amp-exporter/internal/testsupport/threadgen"
	"github.com/amp-exporter/amp-exporter/parser/thread"
	"github.com/amp-exporter/amp-exporter/pricing"
)

// BenchmarkCountItems measures the item counter alone (no file, no apply):
// every summary of a corpus counted from no pins, as a first scan counts
// it, on a generated corpus ("threadgen", the size mix of a real one, a
// sixth of its tool results edits) and on threads of nothing but edit
// calls ("edits", the worst case for the lines families):
//
//	go test -run '^$' -bench CountItems -cpu 1 ./store
func BenchmarkCountItems(b *testing.B) {
	tab, err := pricing.Embedded(func() time.Time { return fixedNow })
	if err != nil {
		b.Fatal(err)
	}
	prices := pricing.New(tab, "genai-prices", "test", nil)
	p := thread.NewParser()
	summarize := func(data []byte) *thread.Summary {
		th, err := p.ParseBytes(data)
		if err != nil {
			b.Fatal(err)
		}
		sum := thread.Summarize(th)
		sum.Items = append([]thread.Item(nil), sum.Items...)
		return sum
	}
	var gen, edits []*thread.Summary
	g := threadgen.New(threadgen.Options{Threads: 200, TotalBytes: 200 * 500_000, Seed: 3, Start: time.Date(2026, 2, 2, 9, 0, 0, 0, time.UTC)})
	for i := 0; i < g.Len(); i++ {
		_, data := g.Thread(i)
		gen = append(gen, summarize(data))
	}
	rng := rand.New(rand.NewPCG(29, 3))
	for range 200 {
		edits = append(edits, summarize([]byte(threadDoc("T-1", "", editThread(rng)...))))
	}
	for _, c := range []struct {
		name string
		sums []*thread.Summary
	}{{"threadgen", gen}, {"edits", edits}} {
		b.Run(c.name, func(b *testing.B) {
			s := newTestStore(0)
			items := 0
			for _, sum := range c.sums {
				items += len(sum.Items)
			}
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				for _, sum := range c.sums {
					k := newItemCounter(s, sum, prices, nil)
					k.count(false)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*items), "ns/item")
		})
	}
}
