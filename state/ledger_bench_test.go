package state

import (
	"encoding/json"
	"runtime"
	"slices"
	"strconv"
	"testing"

	"github.com/amp-exporter/amp-exporter/store"
)

// BenchmarkLedgerSize is what the usage ledger adds to the state of
// benchCorpus at AMP_BENCH_THREADS threads (docs/performance.md, "The
// usage ledger"): its rows (16 bytes each in memory), the largest
// thread's, the rows it keeps beside them (what items that left a thread
// hold, what a window's prefix gives), and the bytes of the threads' saved
// records with and without all those rows. One op encodes every thread's record, as a save of
// every thread does ("with-ledger") and as it would without the rows
// ("without-ledger"), so the two ns/op are the ledger's share of that
// encoding.
func BenchmarkLedgerSize(b *testing.B) {
	n := benchThreads(b)
	s, _, _ := benchStore(b, n)
	runtime.GC()
	heap := heapMB()
	rows := s.stores.Threads.LedgerRows()
	d := s.stores.Threads.ExportDelta()
	if d.ThreadCount() != n {
		b.Fatalf("%d changed threads, want %d", d.ThreadCount(), n)
	}
	var states []store.ThreadState
	perThread := make([]int, 0, n)
	beside := 0
	if err := d.EachThread(func(_ string, ts store.ThreadState) error {
		states = append(states, ts)
		perThread = append(perThread, len(ts.Ledger))
		beside += len(ts.LedgerRetired)
		if ts.Window != nil {
			beside += len(ts.Window.Ledger)
		}
		return nil
	}); err != nil {
		b.Fatal(err)
	}
	saved := 0
	for _, k := range perThread {
		saved += k
	}
	if saved != rows {
		b.Fatalf("%d rows saved, the store holds %d", saved, rows)
	}
	slices.Sort(perThread)
	encode := func(b *testing.B, ledger bool) int {
		total := 0
		for _, ts := range states {
			if !ledger {
				ts.Ledger, ts.LedgerRetired = nil, nil
				if ts.Window != nil {
					w := *ts.Window
					w.Ledger = nil
					ts.Window = &w
				}
			}
			v, err := json.Marshal(ts)
			if err != nil {
				b.Fatal(err)
			}
			total += len(v)
		}
		return total
	}
	with, without := encode(b, true), encode(b, false)
	for _, ledger := range []bool{true, false} {
		name := "with-ledger"
		if !ledger {
			name = "without-ledger"
		}
		b.Run(name+"/threads="+strconv.Itoa(n), func(b *testing.B) {
			b.ReportAllocs()
			for range b.N {
				encode(b, ledger)
			}
			b.ReportMetric(float64(encode(b, ledger))/1e6, "MB-records")
			if ledger {
				b.ReportMetric(float64(rows), "ledger-rows")
				b.ReportMetric(float64(beside), "rows-beside")
				b.ReportMetric(float64(rows)/float64(n), "rows/thread")
				b.ReportMetric(float64(perThread[len(perThread)/2]), "rows-p50")
				b.ReportMetric(float64(perThread[len(perThread)*99/100]), "rows-p99")
				b.ReportMetric(float64(perThread[len(perThread)-1]), "rows-max")
				b.ReportMetric(float64(rows)*16/1e6, "MB-ledger-mem")
				b.ReportMetric(100*float64(with-without)/float64(with), "%-ledger-bytes")
				b.ReportMetric(heap, "MB-heap")
			}
		})
	}
}
