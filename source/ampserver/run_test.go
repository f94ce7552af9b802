package ampserver

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/amp-exporter/amp-exporter/collector"
	"github.com/amp-exporter/amp-exporter/internal/testsupport/ampservertest"
)

type sourceMetrics struct {
	mu     sync.Mutex
	ups    []bool
	synced int
	ent    []collector.Entitlement
	upCh   chan bool
	skip   map[string]int
}

func (m *sourceMetrics) ThreadSkipped(reason string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.skip == nil {
		m.skip = map[string]int{}
	}
	m.skip[reason]++
}

func (m *sourceMetrics) Up(ok bool) {
	m.mu.Lock()
	m.ups = append(m.ups, ok)
	m.mu.Unlock()
	m.upCh <- ok
}
func (m *sourceMetrics) Synced(time.Time) { m.mu.Lock(); m.synced++; m.mu.Unlock() }
func (m *sourceMetrics) SetEntitlement(e collector.Entitlement) {
	m.mu.Lock()
	m.ent = append(m.ent, e)
	m.mu.Unlock()
}

// TestRunRefusedKeyRetriesSlowlyAndNeverLogsIt: a refused key is one
// error line per attempt, amp_server_up 0 and a retry only after
// AuthRetry; the key is in no log line, even when the server echoes it.
func TestRunRefusedKeyRetriesSlowlyAndNeverLogsIt(t *testing.T) {
	t.Parallel() // mostly waiting (a millisecond a fake second): alongside the other waiter
	h := newHarness(t, 3, SyncConfig{Interval: 2 * time.Second, AuthRetry: 5 * time.Minute})
	m := &sourceMetrics{upCh: make(chan bool, 16)}
	h.sync.source = m
	h.srv.SetKey("the-right-key")
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	start := make(chan struct{})
	close(start)
	go func() { done <- h.sync.Run(ctx, start) }()
	if ok := <-m.upCh; ok {
		t.Fatal("up with a refused key")
	}
	if n := h.srv.Requests()[MethodGetUserInfo]; n != 1 {
		t.Fatalf("%d user info requests", n)
	}
	// Step the clock until the next attempt: not before AuthRetry.
	var advanced time.Duration
	for h.srv.Requests()[MethodGetUserInfo] < 2 {
		h.clk.Advance(time.Second)
		advanced += time.Second
		time.Sleep(time.Millisecond)
		if advanced > time.Hour {
			t.Fatal("no retry within an hour")
		}
	}
	if advanced < 5*time.Minute {
		t.Fatalf("retried after %v, want at least 5m", advanced)
	}
	<-m.upCh
	// Now the key is accepted, and the server answers with errors that
	// quote it.
	h.srv.SetKey(testKey)
	echo := ampservertest.Fault{Status: 500, Code: "boom " + testKey}
	h.srv.Fail(MethodListThreads, echo, echo, echo, echo) // more than the client retries
	for i := 0; ; i++ {
		if i > 24*3600 {
			t.Fatal("the source did not come up within a day of fake time")
		}
		h.clk.Advance(time.Second)
		time.Sleep(time.Millisecond)
		select {
		case ok := <-m.upCh:
			if ok {
				goto synced
			}
		default:
		}
	}
synced:
	cancel()
	<-done
	log := h.log.String()
	if strings.Contains(log, testKey) || strings.Contains(log, "the-right-key") {
		t.Fatalf("the key was logged:\n%s", log)
	}
	if n := strings.Count(log, "level=ERROR msg=\"the Amp server refused the API key"); n != 1 {
		t.Fatalf("%d error lines about the refused key, want 1:\n%s", n, log)
	}
	if !strings.Contains(log, "accepts the API key again") {
		t.Fatalf("no line about the key accepted again:\n%s", log)
	}
	if !strings.Contains(log, "sync with the Amp server incomplete") {
		t.Fatalf("no line about the failed sync:\n%s", log)
	}
	if len(h.store.AmpServerPaths()) != 3 {
		t.Fatal("nothing counted after the key was accepted")
	}
}
