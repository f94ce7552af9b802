package store

import (
	"maps"
	"os"
	"path/filepath"
	"testing"

	"github.com/amp-exporter/amp-exporter/internal/testsupport/threadgen"
	"github.com/amp-exporter/amp-exporter/parser/thread"
	"github.com/amp-exporter/amp-exporter/pricing"
)

// Count gives what a store that never saw the thread adds to its totals on
// a first Apply: for the parser's fixtures and generated threads, priced
// (one model unknown to the price table) and with a label cap small enough
// to fold, each thread alone and in order (the cap remembers what it saw).
func TestCountIsAFirstApply(t *testing.T) {
	prices := pricing.New(nil, "test", "1", map[string]pricing.Price{
		"claude-opus-4-6": {Input: 5, Output: 25, CacheRead: 0.5, CacheWrite: 6.25, HasCacheRead: true, HasCacheWrite: true},
		"claude-sonnet-4-5-20250929": {Input: 3, Output: 15, CacheRead: 0.3, CacheWrite: 3.75, HasCacheRead: true, HasCacheWrite: true,
			Long: &pricing.Price{Input: 6, Output: 22.5}},
		"claude-haiku-4-5-20251001": {Input: 1, Output: 5},
	})
	p := thread.NewParser()
	var docs [][]byte
	fixtures, _ := filepath.Glob("../parser/thread/testdata/*.json")
	for _, f := range fixtures {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		docs = append(docs, b)
	}
	g := threadgen.New(threadgen.Options{Threads: 40, TotalBytes: 4 << 20, Seed: 7})
	for i := range g.Len() {
		_, b := g.Thread(i)
		docs = append(docs, b)
	}
	for _, capSize := range []int{2, 100} {
		applied := NewLabelCap(capSize, nil)
		counted := NewLabelCap(capSize, nil)
		counter := NewThreadStore(StoreOptions{Labels: counted})
		counter.SetPrices(prices)
		parsed := 0
		for i, doc := range docs {
			th, err := p.ParseBytes(doc)
			if err != nil {
				continue // the fixtures include broken files
			}
			parsed++
			sum := thread.Summarize(th)
			fresh := NewThreadStore(StoreOptions{Labels: applied})
			fresh.SetPrices(prices)
			fresh.Apply("/d/T.json", FileVersion{}, sum)
			want := fresh.Snapshot().Totals()
			got := counter.Count(sum)
			if !maps.Equal(got, want) {
				t.Errorf("cap %d, document %d: Count\n %v\nfirst Apply\n %v", capSize, i, got, want)
			}
		}
		if parsed < 40 {
			t.Fatalf("only %d documents parsed", parsed)
		}
		if len(counter.Snapshot().Totals()) != 0 {
			t.Errorf("Count recorded something: %v", counter.Snapshot().Totals())
		}
	}
}
