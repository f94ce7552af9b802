package workspace

import (
	"runtime"
	"testing"
	"time"

	ws "github.com/amp-exporter/amp-exporter/internal/testsupport/workspacetest"
)

// BenchmarkSync measures a first sync and a sync where nothing changed
// on the stand-in: requests and bytes of each, the heap the source keeps
// (its store, after both syncs; the stand-in's own heap is the
// baseline), and the state file's size. Requests at the default budget
// (120 a minute) give how long the first sync takes in minutes.
//
//	go test -run '^$' -bench 'BenchmarkSync' -benchtime 1x ./source/workspace/
func BenchmarkSync(b *testing.B) {
	for _, bc := range []struct {
		name string
		cfg  ws.Config
	}{
		{"users=50/threads=2000/days=120", ws.Config{}},
		{"users=2000/threads=200000/days=120", ws.Config{Users: 2000, Threads: 200_000}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			for range b.N {
				benchSync(b, bc.cfg)
			}
		})
	}
}

func heapInUse() uint64 {
	var m runtime.MemStats
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&m)
	return m.HeapInuse
}

func benchSync(b *testing.B, cfg ws.Config) {
	// A budget the fake clock never waits for: the requests are counted,
	// their pace is arithmetic (requests / budget).
	f := newFixtureBudget(b, cfg, ws.Options{}, 1<<40)
	base := heapInUse()
	b.ResetTimer()
	f.mustSync(b)
	b.StopTimer()
	first, firstBytes := len(f.s.Requests()), f.s.BytesServed()
	usage := f.s.Count(ws.RouteUsage)
	f.s.ResetRequests()
	f.clk.Advance(5 * time.Minute)
	f.mustSync(b)
	again, againBytes := len(f.s.Requests()), f.s.BytesServed()
	f.s.ResetRequests()
	heap := heapInUse()
	n, err := SaveState(b.TempDir(), f.store.Export())
	if err != nil {
		b.Fatal(err)
	}
	threads := f.store.Threads()
	b.ReportMetric(float64(first), "first-requests")
	b.ReportMetric(float64(usage), "first-usage-requests")
	b.ReportMetric(float64(firstBytes)/1e6, "first-MB")
	b.ReportMetric(float64(first)/120, "first-minutes@120/min")
	b.ReportMetric(float64(again), "nochange-requests")
	b.ReportMetric(float64(againBytes)/1e6, "nochange-MB")
	b.ReportMetric(float64(int64(heap)-int64(base))/1e6, "heap-MB")
	b.ReportMetric(float64(n)/1e6, "state-MB")
	b.ReportMetric(float64(n)/float64(threads), "state-B/thread")
	b.ReportMetric(float64(threads), "threads-kept")
	runtime.KeepAlive(f)
}
