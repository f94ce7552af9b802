package store

import (
	"encoding/json"
	"strconv"
	"testing"
	"time"

	"github.com/amp-exporter/amp-exporter/internal/testsupport/threadgen"
	"github.com/amp-exporter/amp-exporter/parser/thread"
	"github.com/amp-exporter/amp-exporter/pricing"
)

// pinCorpus applies a generated corpus (the size mix of a real one, 500 kB
// a thread on average) to a store.
func pinCorpus(tb testing.TB, threads int) (*ThreadStore, int) {
	tb.Helper()
	g := threadgen.New(threadgen.Options{Threads: threads, TotalBytes: int64(threads) * 500_000, Seed: 3, Start: time.Date(2026, 2, 2, 9, 0, 0, 0, time.UTC)})
	s := newTestStore(0)
	p := thread.NewParser()
	items := 0
	for i := 0; i < g.Len(); i++ {
		name, data := g.Thread(i)
		th, err := p.ParseBytes(data)
		if err != nil {
			tb.Fatal(err)
		}
		sum := thread.Summarize(th)
		items += len(sum.Items)
		s.Apply("/d/"+name, FileVersion{Size: int64(len(data))}, sum)
	}
	return s, items
}

// BenchmarkPinnedLabels reports what the pinned labels cost per thread, in
// memory and in the state file, on a generated corpus:
//
//	go test -run '^$' -bench PinnedLabels -benchtime 1x ./collector
func BenchmarkPinnedLabels(b *testing.B) {
	for i := 0; i < b.N; i++ {
		s, items := pinCorpus(b, 200)
		total, threads := s.PinBytes()
		var state int
		for _, ts := range s.Export().Threads {
			data, err := json.Marshal(ts.Pins)
			if err != nil {
				b.Fatal(err)
			}
			state += len(data)
		}
		b.ReportMetric(float64(total)/float64(threads), "pin-bytes/thread")
		b.ReportMetric(float64(state)/float64(threads), "state-bytes/thread")
		b.ReportMetric(float64(items)/float64(threads), "items/thread")
	}
}

// TestPinnedLabelsStaySmall holds the pins of a generated corpus to a
// budget: at 30,000 threads, 512 bytes a thread is 15 MB. It also checks
// that they survive a state round trip unchanged.
func TestPinnedLabelsStaySmall(t *testing.T) {
	s, items := pinCorpus(t, 40)
	total, threads := s.PinBytes()
	perThread := total / threads
	t.Logf("%d threads, %.0f items a thread, %d pin bytes a thread", threads, float64(items)/float64(threads), perThread)
	if perThread > 512 {
		t.Errorf("pins cost %d bytes a thread, budget 512", perThread)
	}
	st := s.Export()
	restored := newTestStore(0)
	if err := restored.Import(roundTrip(t, st)); err != nil {
		t.Fatal(err)
	}
	again := restored.Export()
	for key, ts := range st.Threads {
		a, _ := json.Marshal(ts.Pins)
		b, _ := json.Marshal(again.Threads[key].Pins)
		if string(a) != string(b) {
			t.Fatalf("thread %s: pins changed in a state round trip:\n%s\n%s", key, a, b)
		}
	}
}

// BenchmarkApplyRewrite measures Apply of every thread of a corpus into an
// empty store ("first-apply", a start-up scan), and of an unchanged rewrite
// of each (the steady state of a watched directory), item by item with pins
// ("items"), and from the totals alone as before items existed ("totals"):
//
//	go test -run '^$' -bench ApplyRewrite ./collector
func BenchmarkApplyRewrite(b *testing.B) {
	g := threadgen.New(threadgen.Options{Threads: 200, TotalBytes: 200 * 500_000, Seed: 3, Start: time.Date(2026, 2, 2, 9, 0, 0, 0, time.UTC)})
	var sums []*thread.Summary
	for i := 0; i < g.Len(); i++ {
		_, data := g.Thread(i)
		// A parser per thread: a summary's items are the parser's until
		// it parses again (thread.Summary.ItemsValid), and Apply takes
		// those of a reused parser's earlier threads for stale.
		th, err := thread.NewParser().ParseBytes(data)
		if err != nil {
			b.Fatal(err)
		}
		sums = append(sums, thread.Summarize(th))
	}
	tab, err := pricing.Embedded(func() time.Time { return fixedNow })
	if err != nil {
		b.Fatal(err)
	}
	prices := pricing.New(tab, "genai-prices", "test", nil)
	b.Run("first-apply", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			s := newTestStore(0)
			s.SetPrices(prices)
			for j, sum := range sums {
				s.Apply("/d/"+strconv.Itoa(j), FileVersion{}, sum)
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(sums)), "ns/thread")
	})
	for _, mode := range []string{"items", "totals"} {
		b.Run(mode, func(b *testing.B) {
			s := newTestStore(0)
			run := func() {
				for i, sum := range sums {
					if mode == "totals" {
						c := *sum
						c.Items = nil
						sum = &c
					}
					s.Apply("/d/"+strconv.Itoa(i), FileVersion{}, sum)
				}
			}
			run()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				run()
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(sums)), "ns/thread")
		})
	}
}
