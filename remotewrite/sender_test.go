package remotewrite

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"

	"github.com/amp-exporter/amp-exporter/internal/clock"
	sharedtest "github.com/amp-exporter/amp-exporter/internal/testsupport/testutil"
)

// receiver is an httptest remote-write receiver whose answers a test
// scripts: respond returns the status and headers for the n-th request
// (from 1).
type receiver struct {
	t       *testing.T
	srv     *httptest.Server
	respond func(n int) (int, http.Header)
	hang    chan struct{} // when set, requests block until it is closed

	mu       sync.Mutex
	requests int
	pushes   [][]decodedSample // decoded bodies of every request
}

func newReceiver(t *testing.T, respond func(n int) (int, http.Header)) *receiver {
	r := &receiver{t: t, respond: respond}
	r.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		samples, err := decodeRequest(req, body)
		if err != nil {
			t.Errorf("receiver: %v", err)
		}
		r.mu.Lock()
		r.requests++
		n := r.requests
		r.pushes = append(r.pushes, samples)
		r.mu.Unlock()
		if r.hang != nil {
			select {
			case <-r.hang:
			case <-req.Context().Done():
			}
			return
		}
		code, h := http.StatusNoContent, http.Header(nil)
		if r.respond != nil {
			code, h = r.respond(n)
		}
		for k, v := range h {
			w.Header()[k] = v
		}
		w.WriteHeader(code)
		if code >= 400 {
			io.WriteString(w, "err: status "+http.StatusText(code)+"\nsecond line")
		}
	}))
	t.Cleanup(r.srv.Close)
	return r
}

// last returns the decoded body of the latest request; nil before any.
func (r *receiver) last() []decodedSample {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.pushes) == 0 {
		return nil
	}
	return r.pushes[len(r.pushes)-1]
}

func (r *receiver) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.requests
}

type fixture struct {
	reg     *prometheus.Registry
	metrics *Metrics
	clk     *clock.Fake
	sender  *Sender
	logs    *sharedtest.SyncBuffer
	tokens  prometheus.Counter
}

var start = time.Date(2026, 12, 1, 8, 0, 0, 0, time.UTC)

func newFixture(t *testing.T, url string, mod func(*Options)) *fixture {
	t.Helper()
	f := &fixture{reg: prometheus.NewRegistry(), clk: clock.NewFake(start), logs: &sharedtest.SyncBuffer{}}
	f.tokens = prometheus.NewCounter(prometheus.CounterOpts{Name: "amp_tokens_total", Help: "h"})
	f.reg.MustRegister(f.tokens)
	// The sender's metrics live in their own registry here so that the
	// pushed set is fixed: one series.
	f.metrics = NewMetrics(prometheus.NewRegistry(),
		prometheus.NewCounterVec(prometheus.CounterOpts{Name: "samples_total", Help: "h"}, []string{"url_hash", "result"}),
		prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "last_success", Help: "h"}, []string{"url_hash"}))
	o := Options{
		URL: url, Interval: 30 * time.Second, Timeout: 10 * time.Second,
		ExternalLabels: map[string]string{"user": "alice", "host": "laptop-7"},
		Client:         http.DefaultClient, Gatherer: f.reg, UserAgent: "amp-exporter/test",
		Clock: f.clk, Logger: slog.New(slog.NewTextHandler(f.logs, nil)), Metrics: f.metrics,
	}
	if mod != nil {
		mod(&o)
	}
	f.sender = New(o)
	return f
}

// push runs one push to its interval's deadline and returns its result.
// The fake clock moves only to the retry timers the sender sets, so each
// request is made at the instant the sender chose, however slowly this
// machine runs it. (A clock that moved with real time let a slow request
// eat the interval: an HTTP-date Retry-After read as already past, a retry
// given less time than it needed.)
func (f *fixture) push(t *testing.T) string {
	t.Helper()
	done := make(chan string, 1)
	go func() { done <- f.sender.Push(context.Background(), f.clk.Now().Add(f.sender.o.Interval)) }()
	for {
		select {
		case r := <-done:
			return r
		case <-time.After(time.Millisecond):
			f.clk.AdvanceToNext()
		}
	}
}

func (f *fixture) samples(result string) float64 {
	return testutil.ToFloat64(f.metrics.samples.WithLabelValues(f.sender.Hash(), result))
}

func TestPushSucceeds(t *testing.T) {
	rcv := newReceiver(t, nil)
	f := newFixture(t, rcv.srv.URL+"/api/v1/write", nil)
	f.tokens.Add(5)
	if r := f.push(t); r != ResultSent {
		t.Fatalf("result %s", r)
	}
	if n, last := rcv.count(), rcv.last(); n != 1 || len(last) != 1 {
		t.Fatalf("%d pushes, the last %+v", n, last)
	}
	s := rcv.last()[0]
	want := []Label{{"__name__", "amp_tokens_total"}, {"host", "laptop-7"}, {"user", "alice"}}
	if s.Value != 5 || s.TS != start.UnixMilli() || len(s.Labels) != 3 || s.Labels[0] != want[0] || s.Labels[1] != want[1] || s.Labels[2] != want[2] {
		t.Fatalf("sample %+v", s)
	}
	if f.samples(ResultSent) != 1 || f.samples(ResultFailed) != 0 || f.samples(ResultDropped) != 0 {
		t.Fatal("counted wrong")
	}
	if got := testutil.ToFloat64(f.metrics.lastSuccess.WithLabelValues(f.sender.Hash())); got != float64(start.Unix()) {
		t.Fatalf("last success %v", got)
	}
}

func TestPushRetriesAndOutcomes(t *testing.T) {
	t.Parallel() // mostly waiting on retries and ticks: alongside the other waiter
	retryAfter := func(v string) http.Header { return http.Header{"Retry-After": {v}} }
	for _, tc := range []struct {
		name       string
		respond    func(n int) (int, http.Header)
		want       string
		requests   int  // exactly, or at least when atLeast
		atLeast    bool //
		minElapsed time.Duration
	}{
		{name: "5xx then success", respond: func(n int) (int, http.Header) {
			if n < 3 {
				return 503, nil
			}
			return 200, nil
		}, want: ResultSent, requests: 3},
		{name: "always 5xx is dropped within the interval", respond: func(int) (int, http.Header) { return 500, nil },
			want: ResultDropped, requests: 5, atLeast: true},
		{name: "429 waits for Retry-After seconds", respond: func(n int) (int, http.Header) {
			if n == 1 {
				return 429, retryAfter("7")
			}
			return 204, nil
		}, want: ResultSent, requests: 2, minElapsed: 7 * time.Second},
		{name: "429 with an HTTP-date Retry-After", respond: func(n int) (int, http.Header) {
			if n == 1 {
				return 429, retryAfter(start.Add(12 * time.Second).Format(http.TimeFormat))
			}
			return 204, nil
		}, want: ResultSent, requests: 2, minElapsed: 12 * time.Second},
		{name: "Retry-After past the interval drops at once", respond: func(int) (int, http.Header) { return 429, retryAfter("3600") },
			want: ResultDropped, requests: 1},
		{name: "400 is not retried", respond: func(int) (int, http.Header) { return 400, nil }, want: ResultFailed, requests: 1},
		{name: "a redirect is not followed nor retried", respond: func(int) (int, http.Header) {
			return 307, http.Header{"Location": {"http://127.0.0.1:1/"}}
		}, want: ResultFailed, requests: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rcv := newReceiver(t, tc.respond)
			f := newFixture(t, rcv.srv.URL, func(o *Options) {
				o.Client = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
			})
			if got := f.push(t); got != tc.want {
				t.Fatalf("result %s, want %s", got, tc.want)
			}
			if n := rcv.count(); n != tc.requests && !(tc.atLeast && n >= tc.requests) {
				t.Fatalf("%d requests, want %d", n, tc.requests)
			}
			if el := f.clk.Now().Sub(start); el < tc.minElapsed || el > 30*time.Second+time.Second {
				t.Fatalf("push took %s of fake time, want at least %s and within the interval", el, tc.minElapsed)
			}
			for _, r := range []string{ResultSent, ResultFailed, ResultDropped} {
				want := 0.0
				if r == tc.want {
					want = 1
				}
				if got := f.samples(r); got != want {
					t.Errorf("samples{result=%s} = %v, want %v", r, got, want)
				}
			}
		})
	}
}

func TestPermanentErrorLoggedOncePerDistinctError(t *testing.T) {
	code := 400
	rcv := newReceiver(t, func(int) (int, http.Header) { return code, nil })
	f := newFixture(t, rcv.srv.URL+"/write?token=s3cret", nil)
	for range 3 {
		f.push(t)
	}
	code = 401
	f.push(t)
	f.push(t)
	logs := f.logs.String()
	if n := strings.Count(logs, "refused the push"); n != 2 {
		t.Fatalf("%d refusal lines, want 2 (one per distinct error):\n%s", n, logs)
	}
	if strings.Contains(logs, "s3cret") || strings.Contains(logs, "second line") {
		t.Fatalf("logs carry the URL's token or the whole body:\n%s", logs)
	}
	if f.samples(ResultFailed) != 5 {
		t.Fatalf("failed = %v", f.samples(ResultFailed))
	}
}

func TestHangingReceiverNeverBlocksScrapes(t *testing.T) {
	rcv := newReceiver(t, nil)
	rcv.hang = make(chan struct{})
	defer close(rcv.hang)
	f := newFixture(t, rcv.srv.URL+"/write?token=s3cret", func(o *Options) { o.Timeout = 20 * time.Millisecond })
	done := make(chan string, 1)
	go func() { done <- f.push(t) }()
	// While the push hangs, the registry still answers.
	for rcv.count() == 0 {
		time.Sleep(time.Millisecond)
	}
	if _, err := f.reg.Gather(); err != nil {
		t.Fatal(err)
	}
	if r := <-done; r != ResultDropped {
		t.Fatalf("result %s", r)
	}
	if strings.Contains(f.logs.String(), "s3cret") {
		t.Fatalf("the URL's token reached the logs:\n%s", f.logs.String())
	}
	if f.samples(ResultDropped) != 1 {
		t.Fatalf("dropped = %v", f.samples(ResultDropped))
	}
}

// After an outage the next push carries the current values at the current
// time: nothing old is replayed.
func TestNoReplayAfterOutage(t *testing.T) {
	down := true
	var mu sync.Mutex
	rcv := newReceiver(t, func(int) (int, http.Header) {
		mu.Lock()
		defer mu.Unlock()
		if down {
			return 503, nil
		}
		return 204, nil
	})
	f := newFixture(t, rcv.srv.URL, nil)
	f.tokens.Add(1)
	if r := f.push(t); r != ResultDropped {
		t.Fatalf("first push %s", r)
	}
	outage := rcv.count()
	f.tokens.Add(2)
	mu.Lock()
	down = false
	mu.Unlock()
	// The receiver is up: no retry, so the push is stamped this instant.
	at := f.clk.Now()
	if r := f.push(t); r != ResultSent {
		t.Fatalf("second push %s", r)
	}
	last := rcv.last()
	if rcv.count() != outage+1 || len(last) != 1 || last[0].Value != 3 || last[0].TS != at.UnixMilli() {
		t.Fatalf("after the outage: %d requests (outage %d), last push %+v", rcv.count(), outage, last)
	}
	if !strings.Contains(f.logs.String(), "receiver unavailable") || !strings.Contains(f.logs.String(), "accepts pushes again") {
		t.Fatalf("outage and recovery not logged:\n%s", f.logs.String())
	}
}

func TestRunWaitsForReadinessAndPushesOnShutdown(t *testing.T) {
	t.Parallel() // mostly waiting on retries and ticks: alongside the other waiter
	rcv := newReceiver(t, nil)
	var ready atomic.Bool
	f := newFixture(t, rcv.srv.URL, func(o *Options) { o.Ready = ready.Load })
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- f.sender.Run(ctx) }()
	// Not ready: ticks pass without pushes.
	for range 3 {
		time.Sleep(2 * time.Millisecond)
		f.clk.Advance(30 * time.Second)
	}
	if n := rcv.count(); n != 0 {
		t.Fatalf("%d pushes before the first scan finished", n)
	}
	ready.Store(true)
	// Tick, and tick again only when a tick found nothing to do: every
	// extra tick would be one more regular push, after `before` below.
	for rcv.count() == 0 {
		f.clk.Advance(30 * time.Second)
		for i := 0; i < 200 && rcv.count() == 0; i++ {
			time.Sleep(time.Millisecond)
		}
	}
	// A tick still queued from the wait above is pushed now, before the
	// count the shutdown push is measured from (the sender is idle once
	// the count stops moving; nothing here advances the clock).
	for n := -1; n != rcv.count(); {
		n = rcv.count()
		time.Sleep(300 * time.Millisecond)
	}
	f.tokens.Add(9)
	before := rcv.count()
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if rcv.count() != before+1 {
		t.Fatalf("%d pushes at shutdown, want 1", rcv.count()-before)
	}
	if last := rcv.last(); last[0].Value != 9 {
		t.Fatalf("final push %+v", last)
	}
}

// A gather that partly fails still pushes what it gathered, and the same
// error is logged once, not every interval.
func TestPartialGatherPushesTheRest(t *testing.T) {
	rcv := newReceiver(t, nil)
	f := newFixture(t, rcv.srv.URL, nil)
	f.tokens.Add(4)
	f.sender.o.Gatherer = prometheus.GathererFunc(func() ([]*dto.MetricFamily, error) {
		mfs, _ := f.reg.Gather()
		return mfs, errors.New("collector x failed")
	})
	for range 2 {
		if r := f.push(t); r != ResultSent {
			t.Fatalf("result %s", r)
		}
	}
	if last := rcv.last(); len(last) != 1 || last[0].Value != 4 {
		t.Fatalf("pushed %+v", last)
	}
	if n := strings.Count(f.logs.String(), "collector x failed"); n != 1 {
		t.Fatalf("gather error logged %d times:\n%s", n, f.logs.String())
	}
}
