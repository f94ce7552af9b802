//go:build linux || darwin

package ampserver

import (
	"context"
	"encoding/json"
	"os"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/amp-exporter/amp-exporter/internal/clock"
	"github.com/amp-exporter/amp-exporter/internal/testsupport/ampservertest"
	"github.com/amp-exporter/amp-exporter/store"
)

// The benchmarks sync with the stand-in on loopback over a corpus of the
// thread corpus' shape: 2,000 threads, ~1 GB (AMP_BENCH_THREADS and
// AMP_BENCH_BYTES change that). They report requests, bytes fetched and
// CPU time per sync; the CPU includes the stand-in's own serving, which
// runs in the same process.
//
//	go test -run '^$' -bench . -benchtime 1x ./source/ampserver/

var (
	benchOnce sync.Once
	benchSrv  *ampservertest.Server
	benchErr  error
)

func benchServer(b *testing.B) *ampservertest.Server {
	benchOnce.Do(func() {
		benchSrv = ampservertest.New(testKey, "bench@example.com")
		if os.Getenv("AMP_BENCH_GZIP") == "0" {
			benchSrv.DisableGzip() // answers as a server that does not compress
		}
		g := benchCorpus()
		benchErr = benchSrv.PutGenerated(g, 0, g.Len())
	})
	if benchErr != nil {
		b.Fatal(benchErr)
	}
	return benchSrv
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func benchSyncer(b *testing.B, srv *ampservertest.Server, clk *clock.Fake) (*Syncer, *store.ThreadStore) {
	c, err := NewClient(Options{URL: srv.URL, Key: func() (string, error) { return testKey, nil }, MaxResponseBytes: 128 << 20})
	if err != nil {
		b.Fatal(err)
	}
	store := store.NewThreadStore(store.StoreOptions{Now: clk.Now})
	return NewSyncer(c, SyncConfig{MaxThreadBytes: 128 << 20, Billed: true}, store, SyncOptions{Clock: clk}), store
}

type syncCost struct {
	requests int
	bytes    int64
	cpu      time.Duration
}

func (c *syncCost) report(b *testing.B) {
	n := float64(b.N)
	b.ReportMetric(float64(c.requests)/n, "requests/op")
	b.ReportMetric(float64(c.bytes)/n/1e6, "MB-fetched/op")
	b.ReportMetric(c.cpu.Seconds()/n, "cpu-s/op")
}

func measure(b *testing.B, srv *ampservertest.Server, cost *syncCost, f func()) {
	srv.Reset()
	cpu := cpuTime()
	f()
	cost.cpu += cpuTime() - cpu
	for _, v := range srv.Requests() {
		cost.requests += v
	}
	cost.bytes += srv.BytesServed()
}

func BenchmarkFirstSync(b *testing.B) {
	srv := benchServer(b)
	var cost syncCost
	b.ResetTimer()
	for range b.N {
		clk := clock.NewFake(time.Now())
		s, _ := benchSyncer(b, srv, clk)
		measure(b, srv, &cost, func() {
			if st, err := s.Sync(context.Background()); err != nil || st.Fetched != len(srv.IDs()) {
				b.Fatalf("first sync %+v %v", st, err)
			}
		})
	}
	cost.report(b)
}

func BenchmarkIncrementalSync10Changed(b *testing.B) {
	srv := benchServer(b)
	clk := clock.NewFake(time.Now())
	s, _ := benchSyncer(b, srv, clk)
	if _, err := s.Sync(context.Background()); err != nil {
		b.Fatal(err)
	}
	ids := srv.IDs()
	var cost syncCost
	var changedBytes int64
	b.ResetTimer()
	for i := range b.N {
		b.StopTimer()
		clk.Advance(time.Minute)
		for j := range 10 {
			id := ids[(i*10+j*197)%len(ids)]
			var doc struct {
				Messages []json.RawMessage `json:"messages"`
			}
			d := srv.Document(id)
			if err := json.Unmarshal(d, &doc); err != nil || len(doc.Messages) == 0 {
				b.Fatal(err)
			}
			srv.AppendMessage(id, doc.Messages[len(doc.Messages)-1], clk.Now().UnixMilli())
			changedBytes += int64(len(d))
		}
		b.StartTimer()
		measure(b, srv, &cost, func() {
			if st, err := s.Sync(context.Background()); err != nil || st.Fetched != 10 {
				b.Fatalf("incremental sync %+v %v", st, err)
			}
		})
	}
	cost.report(b)
	b.ReportMetric(float64(changedBytes)/float64(b.N)/1e6, "MB-changed/op")
}

// BenchmarkGrowingThread: a 5 MB thread that grows by one exchange (with
// 4 KB of tool output) per sync, read by window and, as the baseline in the
// same run, whole. wire-%-of-thread is the bytes on the wire per sync over
// the thread's size (AMP_BENCH_GZIP=0: an uncompressing server).
func BenchmarkGrowingThread(b *testing.B) {
	for _, mode := range []struct {
		name    string
		overlap int
	}{{"window", 0}, {"whole", -1}} {
		b.Run(mode.name, func(b *testing.B) {
			g := newGrowingThread(b, 5e6)
			defer g.srv.Close()
			if os.Getenv("AMP_BENCH_GZIP") == "0" {
				g.srv.DisableGzip()
			}
			clk := clock.NewFake(time.Now())
			c, err := NewClient(Options{URL: g.srv.URL, Key: func() (string, error) { return testKey, nil }})
			if err != nil {
				b.Fatal(err)
			}
			st := store.NewThreadStore(store.StoreOptions{Now: clk.Now})
			s := NewSyncer(c, SyncConfig{WindowOverlap: mode.overlap, Billed: true}, st, SyncOptions{Clock: clk})
			if _, err := s.Sync(context.Background()); err != nil {
				b.Fatal(err)
			}
			var cost syncCost
			var size int64
			b.ResetTimer()
			for range b.N {
				b.StopTimer()
				clk.Advance(time.Minute)
				g.grow(clk.Now().UnixMilli(), 4)
				size += int64(len(g.srv.Document(g.id)))
				b.StartTimer()
				measure(b, g.srv, &cost, func() {
					if st, err := s.Sync(context.Background()); err != nil || st.Fetched != 1 {
						b.Fatalf("sync %+v %v", st, err)
					}
				})
			}
			cost.report(b)
			b.ReportMetric(float64(size)/float64(b.N)/1e6, "MB-thread/op")
			b.ReportMetric(100*float64(cost.bytes)/float64(size), "wire-%-of-thread")
			// Then the thread goes idle until the next full listing, which
			// reads a thread last counted from a window whole (what lies
			// before its window is read again): its cost, once per
			// full_sync_interval for a thread read by window since.
			b.StopTimer()
			clk.Advance(6 * time.Hour)
			var full syncCost
			measure(b, g.srv, &full, func() {
				if st, err := s.Sync(context.Background()); err != nil || !st.Full {
					b.Fatalf("full listing %+v %v", st, err)
				}
			})
			b.ReportMetric(float64(full.requests), "idle-full-requests")
			b.ReportMetric(float64(full.bytes)/1e6, "idle-full-MB")
		})
	}
}

// BenchmarkFirstSyncExporter: the first sync of the benchmark corpus with
// the stand-in in a process of its own, so that cpu-s/op is the
// exporter's alone (the sub-benchmark keeps the name scan, so results
// compare with benchstat against older revisions). wire-%-of-docs is the bytes
// on the wire over the documents' size (what the tails and pages inflate
// to); MB/s-decoded is the documents' bytes over the exporter's CPU time.
// AMP_BENCH_ZSTD=1: the stand-in answers zstd; AMP_BENCH_GZIP=0: as is.
//
//	go test -run '^$' -bench FirstSyncExporter -benchtime 1x -cpuprofile cpu.out ./source/ampserver/
func BenchmarkFirstSyncExporter(b *testing.B) {
	url := startStandin(b)
	for _, mode := range []string{"scan"} {
		b.Run(mode, func(b *testing.B) {
			var mu sync.Mutex
			bytes := map[string]int64{}
			var cpu time.Duration
			var requests int
			for range b.N {
				clk := clock.NewFake(time.Now())
				c, err := NewClient(Options{URL: url, Key: func() (string, error) { return testKey, nil }, MaxResponseBytes: 128 << 20,
					OnRequest: func(string, string) { mu.Lock(); requests++; mu.Unlock() },
					OnBytes:   func(enc string, n int64) { mu.Lock(); bytes[enc] += n; mu.Unlock() }})
				if err != nil {
					b.Fatal(err)
				}
				st := store.NewThreadStore(store.StoreOptions{Now: clk.Now})
				s := NewSyncer(c, SyncConfig{MaxThreadBytes: 128 << 20, Billed: true}, st, SyncOptions{Clock: clk})
				before := cpuTime()
				if stats, err := s.Sync(context.Background()); err != nil || stats.Fetched == 0 {
					b.Fatalf("first sync %+v %v", stats, err)
				}
				cpu += cpuTime() - before
			}
			n := float64(b.N)
			wire := bytes["gzip"] + bytes["identity"] + bytes["zstd"]
			b.ReportMetric(float64(requests)/n, "requests/op")
			b.ReportMetric(float64(wire)/n/1e6, "MB-wire/op")
			b.ReportMetric(float64(bytes["decoded"])/n/1e6, "MB-decoded/op")
			b.ReportMetric(100*float64(wire)/float64(bytes["decoded"]), "wire-%-of-docs")
			b.ReportMetric(cpu.Seconds()/n, "cpu-s/op")
			b.ReportMetric(float64(bytes["decoded"])/1e6/cpu.Seconds(), "MB/s-decoded")
		})
	}
}
