package otlp

import (
	"context"
	"log/slog"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"go.opentelemetry.io/collector/pdata/pmetric/pmetricotlp"

	"github.com/amp-exporter/amp-exporter/internal/clock"
	sharedtest "github.com/amp-exporter/amp-exporter/internal/testsupport/testutil"
	"github.com/amp-exporter/amp-exporter/store"
)

type fixture struct {
	reg     *prometheus.Registry
	metrics *Metrics
	clk     *clock.Fake
	sender  *Sender
	logs    *sharedtest.SyncBuffer
	tokens  *prometheus.CounterVec
	starts  *store.SeriesStarts
}

var start = time.Date(2026, 12, 1, 8, 0, 0, 0, time.UTC)

func newFixture(t *testing.T, endpoint string, mod func(*Options)) *fixture {
	t.Helper()
	f := &fixture{reg: prometheus.NewRegistry(), clk: clock.NewFake(start), logs: &sharedtest.SyncBuffer{}, starts: store.NewSeriesStarts()}
	f.tokens = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "amp_tokens_total", Help: "h"}, []string{"model"})
	f.reg.MustRegister(f.tokens)
	f.metrics = NewMetrics(prometheus.NewRegistry(),
		prometheus.NewCounterVec(prometheus.CounterOpts{Name: "points_total", Help: "h"}, []string{"url_hash", "result"}),
		prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "last_success", Help: "h"}, []string{"url_hash"}))
	o := Options{
		Endpoint: endpoint, Interval: 30 * time.Second, Timeout: 10 * time.Second,
		Resource: map[string]string{"service.name": "amp-exporter", "service.instance.id": "laptop-7", "user": "alice"},
		Client:   http.DefaultClient, Gatherer: f.reg, Starts: f.starts, UserAgent: "amp-exporter/test",
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
// request is made at the instant the sender chose however slowly this
// machine runs it.
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

func (f *fixture) points(result string) float64 {
	return testutil.ToFloat64(f.metrics.points.WithLabelValues(f.sender.Hash(), result))
}

func partial(rejected int64, msg string) []byte {
	resp := pmetricotlp.NewExportResponse()
	resp.PartialSuccess().SetRejectedDataPoints(rejected)
	resp.PartialSuccess().SetErrorMessage(msg)
	b, err := resp.MarshalProto()
	if err != nil {
		panic(err)
	}
	return b
}

func TestPushSucceeds(t *testing.T) {
	rcv := newReceiver(t, nil)
	f := newFixture(t, rcv.srv.URL+"/v1/metrics", func(o *Options) { o.Headers = map[string]string{"X-Api-Key": "k3y"} })
	f.tokens.WithLabelValues("claude").Add(5)
	if r := f.push(t); r != ResultSent {
		t.Fatalf("result %s", r)
	}
	md := rcv.last()
	res := md.ResourceMetrics().At(0).Resource().Attributes().AsRaw()
	if len(res) != 3 || res["service.name"] != "amp-exporter" || res["service.instance.id"] != "laptop-7" || res["user"] != "alice" {
		t.Fatalf("resource %v", res)
	}
	ps := points(md, "amp_tokens_total")
	if len(ps) != 1 || ps[0].value != 5 || ps[0].time != start.UnixNano() || ps[0].start != start.UnixNano() || ps[0].attrs["model"] != "claude" {
		t.Fatalf("points %+v", ps)
	}
	h := rcv.lastHeader()
	if h.Get("X-Api-Key") != "k3y" || h.Get("User-Agent") != "amp-exporter/test" {
		t.Fatalf("headers %v", h)
	}
	if f.points(ResultSent) != 1 || f.points(ResultFailed) != 0 || f.points(ResultDropped) != 0 || f.points(ResultRejected) != 0 {
		t.Fatal("counted wrong")
	}
	if got := testutil.ToFloat64(f.metrics.lastSuccess.WithLabelValues(f.sender.Hash())); got != float64(start.Unix()) {
		t.Fatalf("last success %v", got)
	}
}

// Each push carries the current totals with each series' first start
// time; a series that appears later starts when it appeared.
func TestStartTimeStableAcrossPushes(t *testing.T) {
	rcv := newReceiver(t, nil)
	f := newFixture(t, rcv.srv.URL, nil)
	f.tokens.WithLabelValues("claude").Add(1)
	f.push(t)
	f.clk.Advance(30 * time.Second)
	f.tokens.WithLabelValues("claude").Add(2)
	f.tokens.WithLabelValues("gpt").Add(7)
	f.push(t)
	ps := points(rcv.last(), "amp_tokens_total")
	if len(ps) != 2 {
		t.Fatalf("points %+v", ps)
	}
	later := start.Add(30 * time.Second).UnixNano()
	for _, p := range ps {
		switch p.attrs["model"] {
		case "claude":
			if p.value != 3 || p.start != start.UnixNano() || p.time != later {
				t.Errorf("claude %+v, want 3 from the first push's time", p)
			}
		case "gpt":
			if p.value != 7 || p.start != later || p.time != later {
				t.Errorf("gpt %+v, want 7 starting at the second push", p)
			}
		}
	}
}

func TestPushRetriesAndOutcomes(t *testing.T) {
	t.Parallel()
	retryAfter := func(v string) http.Header { return http.Header{"Retry-After": {v}} }
	for _, tc := range []struct {
		name       string
		respond    func(n int) (int, http.Header, []byte)
		want       string
		requests   int
		atLeast    bool
		minElapsed time.Duration
	}{
		{name: "503 then success", respond: func(n int) (int, http.Header, []byte) {
			if n < 3 {
				return 503, nil, nil
			}
			return 200, nil, nil
		}, want: ResultSent, requests: 3},
		{name: "502 and 504 are retried", respond: func(n int) (int, http.Header, []byte) {
			switch n {
			case 1:
				return 502, nil, nil
			case 2:
				return 504, nil, nil
			}
			return 200, nil, nil
		}, want: ResultSent, requests: 3},
		{name: "always 503 is dropped within the interval", respond: func(int) (int, http.Header, []byte) { return 503, nil, nil },
			want: ResultDropped, requests: 5, atLeast: true},
		{name: "429 waits for Retry-After seconds", respond: func(n int) (int, http.Header, []byte) {
			if n == 1 {
				return 429, retryAfter("7"), nil
			}
			return 200, nil, nil
		}, want: ResultSent, requests: 2, minElapsed: 7 * time.Second},
		{name: "503 with an HTTP-date Retry-After", respond: func(n int) (int, http.Header, []byte) {
			if n == 1 {
				return 503, retryAfter(start.Add(12 * time.Second).Format(http.TimeFormat)), nil
			}
			return 200, nil, nil
		}, want: ResultSent, requests: 2, minElapsed: 12 * time.Second},
		{name: "Retry-After past the interval drops at once", respond: func(int) (int, http.Header, []byte) { return 429, retryAfter("3600"), nil },
			want: ResultDropped, requests: 1},
		{name: "400 is not retried", respond: func(int) (int, http.Header, []byte) { return 400, nil, nil }, want: ResultFailed, requests: 1},
		{name: "401 is not retried", respond: func(int) (int, http.Header, []byte) { return 401, nil, nil }, want: ResultFailed, requests: 1},
		{name: "500 is not retried (OTLP retries 429, 502, 503, 504 only)", respond: func(int) (int, http.Header, []byte) { return 500, nil, nil },
			want: ResultFailed, requests: 1},
		{name: "a redirect is not followed nor retried", respond: func(int) (int, http.Header, []byte) {
			return 307, http.Header{"Location": {"http://127.0.0.1:1/"}}, nil
		}, want: ResultFailed, requests: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rcv := newReceiver(t, tc.respond)
			f := newFixture(t, rcv.srv.URL, func(o *Options) {
				o.Client = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
			})
			f.tokens.WithLabelValues("claude").Add(1)
			if got := f.push(t); got != tc.want {
				t.Fatalf("result %s, want %s", got, tc.want)
			}
			if n := rcv.count(); n != tc.requests && !(tc.atLeast && n >= tc.requests) {
				t.Fatalf("%d requests, want %d", n, tc.requests)
			}
			if el := f.clk.Now().Sub(start); el < tc.minElapsed || el > 31*time.Second {
				t.Fatalf("push took %s of fake time, want at least %s and within the interval", el, tc.minElapsed)
			}
			for _, r := range []string{ResultSent, ResultRejected, ResultFailed, ResultDropped} {
				want := 0.0
				if r == tc.want {
					want = 1
				}
				if got := f.points(r); got != want {
					t.Errorf("points{result=%s} = %v, want %v", r, got, want)
				}
			}
		})
	}
}

// A receiver that is down for an hour answering 429 and 503 with
// Retry-After: every push of the outage is dropped (none is kept to be
// replayed), and the first push after it carries the whole total, at the
// current time, with the series' first start time.
func TestOutageLosesNoTotalsAndReplaysNothing(t *testing.T) {
	var down atomic.Bool
	down.Store(true)
	rcv := newReceiver(t, func(n int) (int, http.Header, []byte) {
		if down.Load() {
			if n%2 == 0 {
				return 429, http.Header{"Retry-After": {"4"}}, nil
			}
			return 503, http.Header{"Retry-After": {start.Add(time.Duration(n) * time.Minute).Format(http.TimeFormat)}}, nil
		}
		return 200, nil, nil
	})
	f := newFixture(t, rcv.srv.URL, nil)
	f.tokens.WithLabelValues("claude").Add(10)
	if r := f.push(t); r != ResultDropped {
		t.Fatalf("first push %s", r)
	}
	for i := range 120 { // an hour of 30 s intervals
		f.clk.Advance(30 * time.Second)
		f.tokens.WithLabelValues("claude").Add(1)
		if r := f.push(t); r != ResultDropped {
			t.Fatalf("push %d during the outage: %s", i, r)
		}
	}
	outage := rcv.count()
	down.Store(false)
	f.clk.Advance(30 * time.Second)
	at := f.clk.Now()
	if r := f.push(t); r != ResultSent {
		t.Fatalf("push after the outage: %s", r)
	}
	if rcv.count() != outage+1 {
		t.Fatalf("%d requests after the outage, want 1 (nothing replayed)", rcv.count()-outage)
	}
	ps := points(rcv.last(), "amp_tokens_total")
	if len(ps) != 1 || ps[0].value != 130 || ps[0].time != at.UnixNano() || ps[0].start != start.UnixNano() {
		t.Fatalf("after the outage %+v, want 130 at %d starting %d", ps, at.UnixNano(), start.UnixNano())
	}
	if f.points(ResultDropped) != 121 || f.points(ResultSent) != 1 {
		t.Fatalf("dropped %v sent %v", f.points(ResultDropped), f.points(ResultSent))
	}
	logs := f.logs.String()
	if strings.Count(logs, "receiver unavailable") != 1 || strings.Count(logs, "accepts pushes again") != 1 {
		t.Fatalf("outage and recovery should each be logged once:\n%s", logs)
	}
}

// A partial success counts the rejected points, logs the receiver's
// message once per distinct message, and sends nothing again.
func TestPartialSuccess(t *testing.T) {
	var msg atomic.Value
	msg.Store("2 points had no name")
	rcv := newReceiver(t, func(int) (int, http.Header, []byte) { return 200, nil, partial(1, msg.Load().(string)) })
	f := newFixture(t, rcv.srv.URL, nil)
	f.tokens.WithLabelValues("claude").Add(1)
	f.tokens.WithLabelValues("gpt").Add(1)
	for range 3 {
		if r := f.push(t); r != ResultSent {
			t.Fatalf("result %s", r)
		}
	}
	msg.Store("another reason")
	f.push(t)
	if rcv.count() != 4 {
		t.Fatalf("%d requests, want 4 (the rejected part is not retried)", rcv.count())
	}
	if f.points(ResultRejected) != 4 || f.points(ResultSent) != 4 {
		t.Fatalf("rejected %v sent %v, want 4 and 4", f.points(ResultRejected), f.points(ResultSent))
	}
	logs := f.logs.String()
	if strings.Count(logs, "2 points had no name") != 1 || strings.Count(logs, "another reason") != 1 {
		t.Fatalf("each message should be logged once:\n%s", logs)
	}
}

// The answers' bodies are read only so far: a receiver's message reaches
// the log cut to one short line, and an endless body does not hold the
// push.
func TestBoundedAnswers(t *testing.T) {
	long := strings.Repeat("x", 10<<20)
	for _, tc := range []struct {
		name   string
		code   int
		header http.Header
		body   []byte
		want   string
	}{
		{"a long text error", 400, http.Header{"Content-Type": {"text/plain"}}, []byte("bad push: " + long), ResultFailed},
		{"a long JSON status", 400, http.Header{"Content-Type": {"application/json"}}, []byte(`{"code":3,"message":"` + long + `"}`), ResultFailed},
		{"a long success", 200, nil, []byte(long), ResultSent},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rcv := newReceiver(t, func(int) (int, http.Header, []byte) { return tc.code, tc.header, tc.body })
			f := newFixture(t, rcv.srv.URL, nil)
			f.tokens.WithLabelValues("claude").Add(1)
			if r := f.push(t); r != tc.want {
				t.Fatalf("result %s, want %s", r, tc.want)
			}
			for _, line := range strings.Split(f.logs.String(), "\n") {
				if len(line) > 2*maxMessage {
					t.Fatalf("a log line of %d bytes", len(line))
				}
			}
		})
	}
}

func TestErrorMessageFromStatus(t *testing.T) {
	status := []byte{0x08, 0x03, 0x12, 0x0b}
	status = append(status, "bad metric!"...)
	rcv := newReceiver(t, func(int) (int, http.Header, []byte) { return 400, nil, status })
	f := newFixture(t, rcv.srv.URL+"/v1/metrics?token=s3cret", nil)
	f.tokens.WithLabelValues("claude").Add(1)
	for range 3 {
		f.push(t)
	}
	logs := f.logs.String()
	if strings.Count(logs, "bad metric!") != 1 {
		t.Fatalf("the receiver's status message should be logged once:\n%s", logs)
	}
	if strings.Contains(logs, "s3cret") {
		t.Fatalf("the endpoint's token reached the logs:\n%s", logs)
	}
}

func TestHangingReceiverIsBounded(t *testing.T) {
	rcv := newReceiver(t, nil)
	rcv.hang = make(chan struct{})
	defer close(rcv.hang)
	f := newFixture(t, rcv.srv.URL+"/v1/metrics?token=s3cret", func(o *Options) { o.Timeout = 20 * time.Millisecond })
	if r := f.push(t); r != ResultDropped {
		t.Fatalf("result %s", r)
	}
	if strings.Contains(f.logs.String(), "s3cret") {
		t.Fatalf("the endpoint's token reached the logs:\n%s", f.logs.String())
	}
}

func TestRunWaitsForReadinessAndPushesOnShutdown(t *testing.T) {
	t.Parallel()
	rcv := newReceiver(t, nil)
	var ready atomic.Bool
	f := newFixture(t, rcv.srv.URL, func(o *Options) { o.Ready = ready.Load })
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- f.sender.Run(ctx) }()
	for range 3 {
		time.Sleep(2 * time.Millisecond)
		f.clk.Advance(30 * time.Second)
	}
	if n := rcv.count(); n != 0 {
		t.Fatalf("%d pushes before the first scan finished", n)
	}
	ready.Store(true)
	for rcv.count() == 0 {
		f.clk.Advance(30 * time.Second)
		for i := 0; i < 200 && rcv.count() == 0; i++ {
			time.Sleep(time.Millisecond)
		}
	}
	for n := -1; n != rcv.count(); {
		n = rcv.count()
		time.Sleep(300 * time.Millisecond)
	}
	f.tokens.WithLabelValues("claude").Add(9)
	before := rcv.count()
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if rcv.count() != before+1 {
		t.Fatalf("%d pushes at shutdown, want 1", rcv.count()-before)
	}
	if ps := points(rcv.last(), "amp_tokens_total"); len(ps) != 1 || ps[0].value != 9 {
		t.Fatalf("final push %+v", ps)
	}
}

func TestPushGenAINames(t *testing.T) {
	for _, on := range []bool{false, true} {
		rcv := newReceiver(t, nil)
		f := newFixture(t, rcv.srv.URL, func(o *Options) { o.GenAI = on })
		reg := prometheus.NewRegistry()
		tokens := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "amp_tokens_total", Help: "h"}, []string{"model", "token_type"})
		reg.MustRegister(tokens)
		tokens.WithLabelValues("claude-opus-4-6", "output").Add(5)
		f.sender.o.Gatherer = reg
		if r := f.push(t); r != ResultSent {
			t.Fatalf("result %s", r)
		}
		usage := points(rcv.last(), GenAITokenUsage)
		switch {
		case on && (len(usage) != 1 || usage[0].value != 5 || usage[0].attrs["gen_ai.token.type"] != "output"):
			t.Errorf("genai_names on: %+v", usage)
		case !on && len(usage) != 0:
			t.Errorf("genai_names off: %+v", usage)
		}
		if ps := points(rcv.last(), "amp_tokens_total"); len(ps) != 1 || ps[0].value != 5 {
			t.Errorf("genai %v: amp_tokens_total %+v", on, ps)
		}
		if f.points(ResultSent) != float64(len(usage)+1) {
			t.Errorf("genai %v: %v points counted as sent", on, f.points(ResultSent))
		}
	}
}
