//go:build linux || darwin

package ampserver

import (
	"context"
	"encoding/json"
	"os"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/amp-exporter/amp-exporter/internal/ampstandin"
	"github.com/amp-exporter/amp-exporter/internal/clock"
	"github.com/amp-exporter/amp-exporter/internal/threadgen"
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
	benchSrv  *ampstandin.Server
	benchErr  error
)

func benchServer(b *testing.B) *ampstandin.Server {
	benchOnce.Do(func() {
		n, total := 2000, int64(1e9)
		if v, err := strconv.Atoi(os.Getenv("AMP_BENCH_THREADS")); err == nil && v > 0 {
			n = v
		}
		if v, err := strconv.ParseInt(os.Getenv("AMP_BENCH_BYTES"), 10, 64); err == nil && v > 0 {
			total = v
		}
		benchSrv = ampstandin.New(testKey, "bench@example.com")
		if os.Getenv("AMP_BENCH_GZIP") == "0" {
			benchSrv.DisableGzip() // answers as a server that does not compress
		}
		benchErr = benchSrv.PutGenerated(threadgen.New(threadgen.Options{Threads: n, TotalBytes: total, Seed: 1}), 0, n)
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

func benchSyncer(b *testing.B, srv *ampstandin.Server, clk *clock.Fake) (*Syncer, *store.ThreadStore) {
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

func measure(b *testing.B, srv *ampstandin.Server, cost *syncCost, f func()) {
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
