package collector

import (
	"fmt"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/amp-exporter/amp-exporter/parser/thread"
	"github.com/amp-exporter/amp-exporter/store"
)

// BenchmarkGather is one scrape of the Amp collector over a store of 2,000
// threads naming 200 models (about 800 series).
func BenchmarkGather(b *testing.B) {
	s := store.NewThreadStore(store.StoreOptions{MaxLabelValues: 1000})
	p := thread.NewParser()
	for i := range 2000 {
		doc := strings.Replace(withTail(""), `"m1"`, fmt.Sprintf(`"model-%d"`, i%200), 1)
		doc = strings.Replace(doc, `"T-1"`, fmt.Sprintf(`"T-%d"`, i), 1)
		th, err := p.ParseBytes([]byte(doc))
		if err != nil {
			b.Fatal(err)
		}
		s.Apply(fmt.Sprintf("/d/T-%d.json", i), store.FileVersion{Size: 1}, thread.Summarize(th))
	}
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(NewAmpCollector(s, nil))
	mfs, err := reg.Gather()
	if err != nil {
		b.Fatal(err)
	}
	n := 0
	for _, mf := range mfs {
		n += len(mf.GetMetric())
	}
	for b.Loop() {
		if _, err := reg.Gather(); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(n), "series")
}
