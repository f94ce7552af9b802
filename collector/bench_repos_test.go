package collector

import (
	"sync"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/amp-exporter/amp-exporter/internal/testsupport/threadgen"
	"github.com/amp-exporter/amp-exporter/parser/thread"
	"github.com/amp-exporter/amp-exporter/pricing"
	"github.com/amp-exporter/amp-exporter/store"
)

// BenchmarkScrape30kThreads50Repositories is one scrape of /metrics' Amp
// families over a store of 30,000 generated threads spread over 50
// repositories (remotes in every form, one thread in 51 without one),
// with the default label cap (100 values per label). It reports the
// series a scrape gives. The store is filled once per process.
func BenchmarkScrape30kThreads50Repositories(b *testing.B) {
	s := scrapeStore(b)
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(NewAmpCollector(s, nil))
	g := benchGatherer(reg)
	mfs, err := g.Gather()
	if err != nil {
		b.Fatal(err)
	}
	n := 0
	for _, mf := range mfs {
		n += len(mf.GetMetric())
	}
	for b.Loop() {
		if _, err := g.Gather(); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(n), "series")
}

var (
	scrapeOnce  sync.Once
	scrapeFixed *store.ThreadStore
)

func scrapeStore(b *testing.B) *store.ThreadStore {
	scrapeOnce.Do(func() {
		const threads = 30_000
		g := threadgen.New(threadgen.Options{Threads: threads, TotalBytes: threads * 12_000, Seed: 30, Repositories: 50})
		s := benchStore()
		tab, err := pricing.Embedded(nil)
		if err != nil {
			b.Fatal(err)
		}
		s.SetPrices(pricing.New(tab, "genai-prices", tab.Version, nil))
		p := thread.NewParser()
		for i := range threads {
			name, data := g.Thread(i)
			th, err := p.ParseBytes(data)
			if err != nil {
				b.Fatal(err)
			}
			s.Apply("/d/"+name, store.FileVersion{Size: int64(len(data))}, thread.Summarize(th))
		}
		scrapeFixed = s
	})
	return scrapeFixed
}
