package amy

import (
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// heapBound is what 500 open turn streams (the followers, and the stand-in
// serving them, in the same process) may hold in the heap.
const heapBound = 150 << 20

// (h) 500 turns followed at once on loopback, each streamed slowly: every
// turn counts exactly, and the heap stays bounded. A memory assertion;
// nothing here measures time.
func TestLoad500ConcurrentTurns(t *testing.T) {
	if testing.Short() {
		t.Skip("load test")
	}
	const turns = 500
	e := newEnv(t, envOpts{})
	evs := recording(t)
	release := make(chan struct{})
	for i := 0; i < turns; i++ {
		// Every stream is held open after turn.started until all are, then
		// sends the other 29 events 2 ms apart.
		e.amy.addTurn(fmt.Sprintf("turn_%03d", i), evs, connPlan{HoldAfter: 1, Release: release, Delay: 2 * time.Millisecond, Keepalive: true})
	}
	for i := 0; i < turns; i++ {
		e.follow(fmt.Sprintf("turn_%03d", i))
	}
	e.waitMetric(t, `amy_turns_in_flight`, turns)
	if n := e.amy.maxActive(); n != turns {
		t.Fatalf("%d streams open at once, want %d", n, turns)
	}
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	t.Logf("%d streams open: HeapInuse %.1f MiB (HeapAlloc %.1f MiB, Sys %.1f MiB), %d goroutines",
		turns, mib(ms.HeapInuse), mib(ms.HeapAlloc), mib(ms.Sys), runtime.NumGoroutine())
	if ms.HeapInuse > heapBound {
		t.Errorf("HeapInuse %.1f MiB with %d streams open, bound %.0f MiB", mib(ms.HeapInuse), turns, mib(heapBound))
	}

	// The peak while all 500 stream their events.
	var peak atomic.Uint64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		var m runtime.MemStats
		for {
			runtime.ReadMemStats(&m)
			if m.HeapInuse > peak.Load() {
				peak.Store(m.HeapInuse)
			}
			select {
			case <-stop:
				return
			case <-time.After(20 * time.Millisecond):
			}
		}
	}()
	close(release)
	e.waitMetric(t, `amy_turns_finished_total{outcome="completed"}`, turns)
	waitStopped(t, e.client)
	close(stop)
	wg.Wait()
	t.Logf("peak HeapInuse while streaming (no forced GC): %.1f MiB", mib(peak.Load()))
	if peak.Load() > heapBound {
		t.Errorf("peak HeapInuse %.1f MiB, bound %.0f MiB", mib(peak.Load()), mib(heapBound))
	}

	want := recordedCounts(turns)
	want[`amy_stream_duplicate_events_total`] = 0
	want[`amy_turns_given_up_total{reason="timeout"}`] = 0
	checkMetrics(t, metrics(t, e.reg), reconnects(want, nil))
}

func mib(b uint64) float64 { return float64(b) / (1 << 20) }
