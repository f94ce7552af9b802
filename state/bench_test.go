package state

import (
	"log/slog"
	"os"
	"runtime"
	"strconv"
	"testing"

	"github.com/amp-exporter/amp-exporter/internal/threadgen"
	"github.com/amp-exporter/amp-exporter/parser/thread"
	"github.com/amp-exporter/amp-exporter/store"
)

// benchThreads is the number of threads the state benchmarks keep:
// AMP_BENCH_THREADS, default 2,000 (docs/performance.md also uses 30,000).
func benchThreads(b *testing.B) int {
	if v := os.Getenv("AMP_BENCH_THREADS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil {
			b.Fatal(err)
		}
		return n
	}
	return 2000
}

// benchStore is a store holding n small generated threads (8 kB on
// average), and the summary of one of them to rewrite.
func benchStore(b *testing.B, n int) (*testState, string, *thread.Summary) {
	b.Helper()
	gen := threadgen.New(threadgen.Options{Threads: n, TotalBytes: int64(n) * 8000, Seed: 9})
	s := newTestState(b.TempDir())
	p := thread.NewParser()
	var last *thread.Summary
	var lastName string
	for i := range n {
		name, data := gen.Thread(i)
		th, err := p.ParseBytes(data)
		if err != nil {
			b.Fatal(err)
		}
		last, lastName = thread.Summarize(th), name
		s.stores.Threads.Apply("/threads/"+name, store.FileVersion{Size: int64(len(data))}, last)
	}
	return s, "/threads/" + lastName, last
}

// grow rewrites one thread with one more output token, as a thread that
// is being worked in does between two saves.
func grow(s *testState, path string, sum *thread.Summary, i int) {
	for m, t := range sum.Tokens {
		t.Output++
		sum.Tokens[m] = t
		break
	}
	s.stores.Threads.Apply(path, store.FileVersion{Size: int64(1e6 + i)}, sum)
}

func heapMB() float64 {
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return float64(m.HeapInuse) / 1e6
}

// BenchmarkStateSave compares, side by side, the two ways of keeping the
// state that were measured for issue 9: the append-only log of one record
// per changed thread (what the exporter does) and a JSON snapshot of the
// whole state per save (what it did). One op is one thread rewritten and
// one save; bytes/save is what the save wrote.
func BenchmarkStateSave(b *testing.B) {
	n := benchThreads(b)
	b.Run("log/threads="+strconv.Itoa(n), func(b *testing.B) {
		s, path, sum := benchStore(b, n)
		if err := s.keeper.restore(); err != nil { // first save: everything
			b.Fatal(err)
		}
		defer s.keeper.close()
		b.ReportAllocs()
		b.ResetTimer()
		start := s.keeper.written
		for i := range b.N {
			grow(s, path, sum, i)
			if err := s.keeper.save(); err != nil {
				b.Fatal(err)
			}
		}
		b.StopTimer()
		b.ReportMetric(float64(s.keeper.written-start)/float64(b.N), "bytes/save")
		b.ReportMetric(float64(s.keeper.db.Size())/1e6, "MB-on-disk")
		b.ReportMetric(heapMB(), "MB-heap")
	})

}

// BenchmarkStateRestore compares reading the state back at start-up.
func BenchmarkStateRestore(b *testing.B) {
	n := benchThreads(b)
	s, _, _ := benchStore(b, n)
	logDir := b.TempDir()
	s.keeper = newKeeper(Options{Dir: logDir, Stores: s.stores, Metrics: s.metrics, Logger: slog.New(slog.DiscardHandler)})
	if err := s.keeper.restore(); err != nil {
		b.Fatal(err)
	}
	s.keeper.close()
	b.Run("log/threads="+strconv.Itoa(n), func(b *testing.B) {
		b.ReportAllocs()
		for range b.N {
			r := newTestState(logDir)
			if err := r.keeper.restore(); err != nil {
				b.Fatal(err)
			}
			r.keeper.close()
		}
	})

}

// BenchmarkExportDeltaAllChanged is the longest the thread store's lock is
// held for a save: every thread changed since the last one (the first save
// after a fresh scan). The persisted form is built after the lock is
// released, so this is only copying record headers.
func BenchmarkExportDeltaAllChanged(b *testing.B) {
	n := benchThreads(b)
	s, _, _ := benchStore(b, n)
	d := s.stores.Threads.ExportDelta()
	if d.ThreadCount() != n {
		b.Fatalf("%d changed threads, want %d", d.ThreadCount(), n)
	}
	b.ResetTimer()
	for range b.N {
		b.StopTimer()
		s.stores.Threads.Requeue(d)
		b.StartTimer()
		d = s.stores.Threads.ExportDelta()
	}
}
