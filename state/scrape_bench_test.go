package state

import (
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/amp-exporter/amp-exporter/collector"
)

// BenchmarkScrapeWhileSaving gathers the Amp and Amy collectors while the
// state keeper saves, in the same process, at AMP_BENCH_THREADS threads
// (issue 9: "no lock held for more than a few ms by saving; scrapes under
// 20 ms throughout"). Phases: "first-save", while the first save writes
// every thread; "idle", b.N scrapes with nothing else running; "paced",
// b.N scrapes while one thread is rewritten and saved every 100 ms (ten
// times the exporter's save interval); "continuous", b.N scrapes while
// rewrites and saves run back to back (a stress bound: one of the two
// cores does nothing else). One op is one scrape; each phase reports the
// scrapes' median, p99 and worst time. It measures the collectors, not
// HTTP or the text encoding.
func BenchmarkScrapeWhileSaving(b *testing.B) {
	n := benchThreads(b)
	s, path, sum := benchStore(b, n)
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(collector.NewAmpCollector(s.stores.Threads, s.stores.Streams), collector.NewAmyCollector(s.stores.Amy))
	scrape := func() time.Duration {
		t := time.Now()
		if _, err := reg.Gather(); err != nil {
			b.Error(err)
		}
		return time.Since(t)
	}
	report := func(phase string, d []time.Duration) {
		if len(d) == 0 {
			b.Fatalf("%s: no scrape", phase)
		}
		slices.Sort(d)
		ms := func(x time.Duration) float64 { return float64(x) / 1e6 }
		b.ReportMetric(ms(d[len(d)/2]), phase+"-p50-ms")
		b.ReportMetric(ms(d[len(d)*99/100]), phase+"-p99-ms")
		b.ReportMetric(ms(d[len(d)-1]), phase+"-max-ms")
	}
	b.ResetTimer()
	// Phase 1: scrapes while the first save writes everything.
	var first []time.Duration
	done := make(chan error, 1)
	go func() { done <- s.keeper.restore() }()
	for waiting := true; waiting; {
		select {
		case err := <-done:
			if err != nil {
				b.Fatal(err)
			}
			waiting = false
		default:
			first = append(first, scrape())
		}
	}
	defer s.keeper.db.Close()
	scrapes := func() []time.Duration {
		d := make([]time.Duration, 0, b.N)
		for range b.N {
			d = append(d, scrape())
		}
		return d
	}
	idle := scrapes()
	// saving runs rewrites and saves, pause apart, until the scrapes end.
	i := 0
	saving := func(pause time.Duration) ([]time.Duration, int) {
		var wg sync.WaitGroup
		stop := make(chan struct{})
		saves := 0
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				case <-time.After(pause):
				}
				i++
				grow(s, path, sum, i)
				if err := s.keeper.save(); err != nil {
					b.Error(err)
					return
				}
				saves++
			}
		}()
		d := scrapes()
		close(stop)
		wg.Wait()
		return d, saves
	}
	paced, pacedSaves := saving(100 * time.Millisecond)
	continuous, continuousSaves := saving(0)
	b.StopTimer()
	report("first-save", first)
	report("idle", idle)
	report("paced", paced)
	report("continuous", continuous)
	b.ReportMetric(float64(pacedSaves), "paced-saves")
	b.ReportMetric(float64(continuousSaves), "continuous-saves")
}
