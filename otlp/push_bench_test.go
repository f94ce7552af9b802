//go:build unix

package otlp_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"sort"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/klauspost/compress/snappy"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/amp-exporter/amp-exporter/collector"
	"github.com/amp-exporter/amp-exporter/internal/testsupport/threadgen"
	"github.com/amp-exporter/amp-exporter/otlp"
	"github.com/amp-exporter/amp-exporter/parser/thread"
	"github.com/amp-exporter/amp-exporter/pricing"
	"github.com/amp-exporter/amp-exporter/remotewrite"
	"github.com/amp-exporter/amp-exporter/store"
)

// BenchmarkPushCPU30kThreads compares the CPU of one OTLP push with the
// CPU of one remote-write 1.0 push of the same registry: /metrics' Amp
// families over 30,000 generated threads in 50 repositories (the default
// label cap), each push gathering, converting, encoding, compressing and
// sending to a local receiver that reads the body and discards it. The
// pushes alternate, OTLP then remote-write, and each pair gives a ratio,
// so a machine busy with other work slows both sides of a pair alike.
// It reports the CPU of each (process CPU: the push and the receiver's
// read of its body, user and system), the median and largest ratio over
// the pairs, the series and the body sizes. Unix only (getrusage).
//
//	go test -run '^$' -bench 'CPU30k' -benchtime 40x ./otlp/
func BenchmarkPushCPU30kThreads(b *testing.B) {
	g := pushGatherer(b)
	var rwBytes, otlpBytes byteCounter
	rwURL := discardReceiver(b, &rwBytes)
	otlpURL := discardReceiver(b, &otlpBytes)
	rw := remotewrite.New(remotewrite.Options{URL: rwURL, Interval: time.Minute, Timeout: 30 * time.Second,
		Client: http.DefaultClient, Gatherer: g})
	op := otlp.New(otlp.Options{Endpoint: otlpURL, Interval: time.Minute, Timeout: 30 * time.Second,
		Client: http.DefaultClient, Gatherer: g, Starts: store.NewSeriesStarts(), Resource: benchResource})
	ctx := context.Background()
	push := func(name string, f func(context.Context, time.Time) string) func() {
		return func() {
			if r := f(ctx, time.Now().Add(time.Minute)); r != "sent" {
				b.Fatalf("%s push: %s", name, r)
			}
		}
	}
	// One push each first: the start times are recorded on the first
	// OTLP push, and the connections are opened.
	push("otlp", op.Push)()
	push("remote-write", rw.Push)()
	rwBytes.reset()
	otlpBytes.reset()
	pairs := comparePairs(b, push("otlp", op.Push), push("remote-write", rw.Push))
	b.ReportMetric(float64(otlpBytes.load())/float64(pairs), "otlp-bytes/push")
	b.ReportMetric(float64(rwBytes.load())/float64(pairs), "rw-bytes/push")
	mfs, err := g.Gather()
	if err != nil {
		b.Fatal(err)
	}
	n := 0
	for _, mf := range mfs {
		n += len(mf.GetMetric())
	}
	b.ReportMetric(float64(n), "series")
}

// BenchmarkEncodeCPU30kThreads is the part of the two pushes that
// differs, on one gathered registry (the gather is the same work for
// both, and most of a push): OTLP's Convert and Marshal (protobuf, gzip)
// against remote-write's Convert, Marshal and snappy, in pairs as
// BenchmarkPushCPU30kThreads.
func BenchmarkEncodeCPU30kThreads(b *testing.B) {
	mfs, err := pushGatherer(b).Gather()
	if err != nil {
		b.Fatal(err)
	}
	starts := store.NewSeriesStarts()
	now := time.Now()
	comparePairs(b, func() {
		md, _ := otlp.Convert(mfs, otlp.ConvertOptions{Starts: starts, Now: now, Resource: benchResource})
		if _, err := otlp.Marshal(md); err != nil {
			b.Fatal(err)
		}
	}, func() {
		_ = snappy.Encode(nil, remotewrite.Marshal(remotewrite.Convert(mfs, nil), now.UnixMilli()))
	})
}

var benchResource = map[string]string{"service.name": "amp-exporter", "service.instance.id": "laptop-7"}

// comparePairs runs otlpRun then rwRun once per iteration, each after a
// garbage collection (so neither pays for the other's garbage), measures
// the process CPU of each, and reports both per run and the median and
// largest ratio otlp/rw over the pairs. It returns the number of pairs.
func comparePairs(b *testing.B, otlpRun, rwRun func()) int {
	b.Helper()
	measure := func(f func()) time.Duration {
		runtime.GC()
		t0 := cpuTime(b)
		f()
		return cpuTime(b) - t0
	}
	var cpuOTLP, cpuRW time.Duration
	var ratios []float64
	for b.Loop() {
		o := measure(otlpRun)
		r := measure(rwRun)
		cpuOTLP += o
		cpuRW += r
		if r > 0 {
			ratios = append(ratios, float64(o)/float64(r))
		}
	}
	if len(ratios) == 0 {
		b.Fatal("no pair measured")
	}
	pairs := len(ratios)
	sort.Float64s(ratios)
	b.ReportMetric(float64(cpuOTLP.Microseconds())/1000/float64(pairs), "otlp-cpu-ms")
	b.ReportMetric(float64(cpuRW.Microseconds())/1000/float64(pairs), "rw-cpu-ms")
	b.ReportMetric(ratios[pairs/2], "median-ratio")
	b.ReportMetric(ratios[pairs-1], "max-ratio")
	return pairs
}

var (
	pushOnce     sync.Once
	pushRegistry prometheus.Gatherer
)

// pushGatherer is the registry /metrics serves for 30,000 generated
// threads over 50 repositories, filled once per process (as the collector
// package's scrape benchmark fills its store).
func pushGatherer(b *testing.B) prometheus.Gatherer {
	pushOnce.Do(func() {
		const threads = 30_000
		g := threadgen.New(threadgen.Options{Threads: threads, TotalBytes: threads * 12_000, Seed: 30, Repositories: 50})
		s := store.NewThreadStore(store.StoreOptions{MaxLabelValues: 100, Repositories: store.NewRepositories(nil)})
		tab, err := pricing.Embedded(nil)
		if err != nil {
			b.Fatal(err)
		}
		s.SetPrices(pricing.New(tab, "genai-prices", tab.Version, nil))
		p := thread.NewParser()
		for i := range threads {
			name, data := g.Thread(i)
			th, err := p.ParseBytes(data)
			if err != nil {
				b.Fatal(err)
			}
			s.Apply("/d/"+name, store.FileVersion{Size: int64(len(data))}, thread.Summarize(th))
		}
		reg := prometheus.NewPedanticRegistry()
		reg.MustRegister(collector.NewAmpCollector(s, nil))
		pushRegistry = collector.WithoutEmptyRepository(reg)
	})
	return pushRegistry
}

// byteCounter adds up the bodies a receiver read.
type byteCounter struct {
	mu sync.Mutex
	n  int64
}

func (c *byteCounter) add(n int64) {
	c.mu.Lock()
	c.n += n
	c.mu.Unlock()
}

func (c *byteCounter) reset() {
	c.mu.Lock()
	c.n = 0
	c.mu.Unlock()
}

func (c *byteCounter) load() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n
}

// discardReceiver accepts every push with 200 after reading its body, and
// counts the body's bytes in c.
func discardReceiver(b *testing.B, c *byteCounter) string {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n, _ := io.Copy(io.Discard, r.Body)
		c.add(n)
		w.WriteHeader(http.StatusOK)
	}))
	b.Cleanup(srv.Close)
	return srv.URL
}

// cpuTime is the CPU this process has used, user and system, all threads:
// the push's goroutine, the garbage collector's work for its allocations
// and the receiver's.
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
