package store

import (
	"os"
	"runtime"
	"runtime/pprof"
	"strconv"
	"testing"
	"time"
	"unsafe"

	"github.com/amp-exporter/amp-exporter/internal/testsupport/threadgen"
	"github.com/amp-exporter/amp-exporter/parser/thread"
	"github.com/amp-exporter/amp-exporter/pricing"
)

// memoryCorpus is n generated threads the size of the state benchmarks'
// (8 kB on average, four weeks): names and file contents.
func memoryCorpus(n int) (names []string, files [][]byte) {
	g := threadgen.New(threadgen.Options{Threads: n, TotalBytes: int64(n) * 8000, Seed: 9})
	for i := range g.Len() {
		name, data := g.Thread(i)
		names, files = append(names, name), append(files, data)
	}
	return names, files
}

// memoryStore is a store set up as the exporter's (prices, the repository
// label on) holding the threads of a corpus, each applied twice: once as
// first written, and again grown by one output token, as a thread being
// worked in is rewritten.
func memoryStore(tb testing.TB, names []string, files [][]byte) *ThreadStore {
	tb.Helper()
	return memoryStoreOf(tb, len(files), func(i int) (string, []byte) { return names[i], files[i] })
}

// memoryStoreOf is memoryStore of n threads read one by one from thread.
func memoryStoreOf(tb testing.TB, n int, threadAt func(i int) (string, []byte)) *ThreadStore {
	tb.Helper()
	tab, err := pricing.Embedded(func() time.Time { return fixedNow })
	if err != nil {
		tb.Fatal(err)
	}
	s := NewThreadStore(StoreOptions{Now: func() time.Time { return fixedNow }, Repositories: NewRepositories(nil)})
	s.SetPrices(pricing.New(tab, "genai-prices", "test", nil))
	for i := range n {
		name, data := threadAt(i)
		// A parser per thread: its summary's items stay valid (Apply
		// refuses those of a parser that parsed again).
		th, err := thread.NewParser().ParseBytes(data)
		if err != nil {
			tb.Fatal(err)
		}
		sum := thread.Summarize(th)
		s.Apply("/d/"+name, FileVersion{Size: int64(len(data))}, sum)
		for j := range sum.Items {
			if sum.Items[j].Tokens.Output > 0 {
				sum.Items[j].Tokens.Output++
				break
			}
		}
		s.Apply("/d/"+name, FileVersion{Size: int64(len(data)) + 1}, sum)
	}
	return s
}

// TestThreadRecordsHoldNoSlack: a thread's series and ledger rows are kept
// for every thread ever seen, so their arrays hold what they use and no
// more: growth room left by appends (up to twice the length) is, at
// 30,000 threads, megabytes that every scan carries twice over (the
// collector lets the heap grow to twice what is live).
func TestThreadRecordsHoldNoSlack(t *testing.T) {
	names, files := memoryCorpus(300)
	s := memoryStore(t, names, files)
	var used, held [2]int
	for key, rec := range s.threads {
		if len(rec.contrib) == 0 {
			t.Fatalf("thread %s: no series", key)
		}
		used[0] += len(rec.contrib)
		held[0] += cap(rec.contrib)
		used[1] += len(rec.ledger)
		held[1] += cap(rec.ledger)
	}
	for i, what := range []string{"series", "ledger rows"} {
		if held[i] != used[i] {
			t.Errorf("%s: %d held for %d used (%.2f×)", what, held[i], used[i], float64(held[i])/float64(used[i]))
		}
	}
}

// TestLabelValuesAreShared: the label values every thread and file keeps
// (its repository, its agent mode) are a few distinct strings over tens
// of thousands of threads, so each is kept once, not once a thread.
func TestLabelValuesAreShared(t *testing.T) {
	names, files := memoryCorpus(300)
	s := memoryStore(t, names, files)
	for _, c := range []struct {
		label  string
		values []string
	}{
		{"repository", func() (out []string) {
			for _, rec := range s.threads {
				out = append(out, rec.repo)
			}
			return out
		}()},
		{"agent_mode", func() (out []string) {
			for _, f := range s.files {
				out = append(out, f.AgentMode)
			}
			return out
		}()},
	} {
		values, copies := map[string]bool{}, map[*byte]bool{}
		for _, v := range c.values {
			if v == "" {
				continue
			}
			values[v] = true
			copies[unsafe.StringData(v)] = true
		}
		if len(values) < 2 || len(values) == len(c.values) {
			t.Fatalf("%s: %d values over %d: the corpus does not repeat them", c.label, len(values), len(c.values))
		}
		if len(copies) != len(values) {
			t.Errorf("%s: %d distinct values kept as %d strings", c.label, len(values), len(copies))
		}
	}
}

// TestThreadStoreMemoryPerThread holds what the store keeps per thread to
// a budget: the heap live after a collection with a store of n threads
// less that with an empty one (the price table, the tables built on first
// use), over n.
func TestThreadStoreMemoryPerThread(t *testing.T) {
	const n = 2000
	names, files := memoryCorpus(n)
	perThread := storeBytesPerThread(t, names, files)
	t.Logf("%.0f bytes a thread (%d threads); a record is %d bytes", perThread, n, unsafe.Sizeof(threadRecord{}))
	// 30,000 threads at 1.4 kB are 42 MB live, which the collector lets
	// grow to twice that between collections: with the state log's index
	// and a scan's working memory, under 150 MB.
	if perThread > 1400 {
		t.Errorf("the store keeps %.0f bytes a thread, budget 1,400", perThread)
	}
	// What few threads have is behind a pointer (threadExtra): every
	// other record fits the allocator's 128-byte class.
	if size := unsafe.Sizeof(threadRecord{}); size > 128 {
		t.Errorf("a thread's record is %d bytes, budget 128", size)
	}
}

// storeBytesPerThread is what a store holding a corpus keeps per thread
// (TestThreadStoreMemoryPerThread).
func storeBytesPerThread(tb testing.TB, names []string, files [][]byte) float64 {
	tb.Helper()
	// What is made once per process (tables built on first use) is made
	// before the first measure.
	runtime.KeepAlive(memoryStore(tb, names[:min(50, len(files))], files[:min(50, len(files))]))
	var live [2]float64
	for i, size := range []int{0, len(files)} {
		base := liveHeap()
		s := memoryStore(tb, names[:size], files[:size])
		live[i] = float64(liveHeap()) - float64(base)
		runtime.KeepAlive(s)
	}
	return (live[1] - live[0]) / float64(len(files))
}

// liveHeap is the heap in use after a full collection.
func liveHeap() uint64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// BenchmarkThreadStoreMemory reports what a store set up as the
// exporter's keeps for a generated corpus of AMP_BENCH_THREADS threads
// (default 2,000; 8 kB each on average, as the state benchmarks' and
// scripts/bench-state.sh's): the heap live after a collection with the
// store less that before it (MB-live), per thread (bytes/thread), and the
// heap the process took from the system by then (MB-heap-sys, the
// corpus is generated one thread at a time and not kept). With
// AMP_BENCH_HEAP_PROFILE set it writes a heap profile there while the
// store is live, for go tool pprof -sample_index=inuse_space:
//
//	AMP_BENCH_THREADS=30000 go test ./store -run '^$' -bench ThreadStoreMemory -benchtime 1x
func BenchmarkThreadStoreMemory(b *testing.B) {
	n := 2000
	if v := os.Getenv("AMP_BENCH_THREADS"); v != "" {
		var err error
		if n, err = strconv.Atoi(v); err != nil || n < 1 {
			b.Fatalf("AMP_BENCH_THREADS=%q: want a whole number", v)
		}
	}
	for range b.N {
		// The generator's tables are live in both measures.
		g := threadgen.New(threadgen.Options{Threads: n, TotalBytes: int64(n) * 8000, Seed: 9})
		base := liveHeap()
		s := memoryStoreOf(b, g.Len(), g.Thread)
		live := float64(liveHeap()) - float64(base)
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		if path := os.Getenv("AMP_BENCH_HEAP_PROFILE"); path != "" {
			writeHeapProfile(b, path)
		}
		runtime.KeepAlive(s)
		runtime.KeepAlive(g)
		b.ReportMetric(live/1e6, "MB-live")
		b.ReportMetric(live/float64(n), "bytes/thread")
		b.ReportMetric(float64(m.HeapSys)/1e6, "MB-heap-sys")
	}
}

// writeHeapProfile writes the heap's profile as of the last collection.
func writeHeapProfile(tb testing.TB, path string) {
	tb.Helper()
	f, err := os.Create(path)
	if err != nil {
		tb.Fatal(err)
	}
	defer f.Close()
	if err := pprof.WriteHeapProfile(f); err != nil {
		tb.Fatalf("heap profile %q: %v", path, err)
	}
}
