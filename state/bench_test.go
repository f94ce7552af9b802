package state

import (
	"log/slog"
	"os"
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/amp-exporter/amp-exporter/internal/testsupport/threadgen"
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

// benchEnv is an integer from the environment, or def when unset.
func benchEnv(b *testing.B, name string, def int) int {
	if v := os.Getenv(name); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			b.Fatalf("%s=%q: want a whole number", name, v)
		}
		return n
	}
	return def
}

// benchCorpus is the generated corpus of n threads the state benchmarks
// keep: small threads (AMP_BENCH_THREAD_BYTES, default 8 kB on average)
// created over four weeks (AMP_BENCH_DAYS days, e.g. 365 for a year of
// use) in each thread's own repository (AMP_BENCH_REPOS: over that many).
func benchCorpus(b *testing.B, n int) threadgen.Options {
	return threadgen.Options{
		Threads:      n,
		TotalBytes:   int64(n) * int64(benchEnv(b, "AMP_BENCH_THREAD_BYTES", 8000)),
		Seed:         9,
		Span:         time.Duration(benchEnv(b, "AMP_BENCH_DAYS", 0)) * 24 * time.Hour,
		Repositories: benchEnv(b, "AMP_BENCH_REPOS", 0),
	}
}

// benchStore is a store holding the n threads of benchCorpus, and the
// summary of one of them to rewrite.
func benchStore(b *testing.B, n int) (*testState, string, *thread.Summary) {
	b.Helper()
	gen := threadgen.New(benchCorpus(b, n))
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

// BenchmarkStateSaveAll is a save of every thread: the first save after a
// fresh scan, or every thread grown at once. One op is one such save
// (copying the headers under the lock, encoding and writing the records,
// and the compaction the superseded records then call for); bytes/save
// is what it wrote.
func BenchmarkStateSaveAll(b *testing.B) {
	n := benchThreads(b)
	s, _, _ := benchStore(b, n)
	all := s.stores.Threads.ExportDelta() // every thread and file, to mark changed again
	if all.ThreadCount() != n {
		b.Fatalf("%d changed threads, want %d", all.ThreadCount(), n)
	}
	s.stores.Threads.Requeue(all)
	if err := s.keeper.restore(); err != nil { // the first save
		b.Fatal(err)
	}
	defer s.keeper.close()
	b.ReportAllocs()
	b.ResetTimer()
	start := s.keeper.written
	for range b.N {
		b.StopTimer()
		s.stores.Threads.Requeue(all)
		b.StartTimer()
		if err := s.keeper.save(); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(s.keeper.written-start)/float64(b.N), "bytes/save")
	b.ReportMetric(float64(s.keeper.db.Size())/1e6, "MB-on-disk")
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
