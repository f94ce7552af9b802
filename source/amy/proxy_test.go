package amy

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/amp-exporter/amp-exporter/parser/sse"
)

// newProxyEnv is an env with the proxy in front of the stand-in.
func newProxyEnv(t *testing.T) (*env, *httptest.Server) {
	e := newEnv(t, envOpts{})
	px := httptest.NewServer(NewProxy(e.ctx, e.up, e.store, e.client, e.log, nil))
	t.Cleanup(func() {
		px.CloseClientConnections()
		e.srv.CloseClientConnections() // a proxied request still open upstream ends too
		px.Close()
	})
	return e, px
}

type reply struct {
	status int
	header http.Header
	body   []byte
}

// call makes a request and reads the whole answer.
func call(t *testing.T, ctx context.Context, method, url, auth, body string) reply {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, url, rd)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", auth)
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("X-Request-Id", "req-4d2a")
	req.Header.Add("X-Multi", "one")
	req.Header.Add("X-Multi", "two")
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Error(err)
		return reply{}
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Error(err)
	}
	return reply{status: resp.StatusCode, header: resp.Header, body: b}
}

// (f) A client reading through the proxy gets the stream byte for byte,
// with status and headers, and the proxy adds nothing to the request.
func TestProxyIsTransparent(t *testing.T) {
	e, px := newProxyEnv(t)
	e.amy.addTurn("turn_p", recording(t), connPlan{Retry: "100", CRLF: true, SplitData: true, Keepalive: true,
		Header: http.Header{"X-Amy-Trace": {"trace-7f3c"}, "X-Multi-Out": {"a", "b"}}})
	direct := call(t, e.ctx, "GET", e.srv.URL+"/v1/turns/turn_p/events", "Bearer "+goodKey, "")
	proxied := call(t, e.ctx, "GET", px.URL+"/v1/turns/turn_p/events", "Bearer "+goodKey, "")
	if direct.status != 200 || proxied.status != 200 {
		t.Fatalf("status %d direct, %d proxied", direct.status, proxied.status)
	}
	if len(direct.body) < 4000 || !bytes.Equal(direct.body, proxied.body) {
		t.Errorf("proxied stream (%d bytes) differs from the direct one (%d bytes)", len(proxied.body), len(direct.body))
	}
	for _, h := range []string{"X-Amy-Trace", "X-Multi-Out", "Content-Type", "Cache-Control"} {
		if !reflect.DeepEqual(direct.header[h], proxied.header[h]) {
			t.Errorf("response header %s: %q direct, %q proxied", h, direct.header[h], proxied.header[h])
		}
	}
	reqs := e.amy.requestsFor("turn_p")
	if len(reqs) != 2 {
		t.Fatalf("%d requests", len(reqs))
	}
	if !reflect.DeepEqual(reqs[0].Header, reqs[1].Header) || reqs[0].Host != reqs[1].Host {
		t.Errorf("request headers differ:\ndirect  %v %s\nproxied %v %s", reqs[0].Header, reqs[0].Host, reqs[1].Header, reqs[1].Host)
	}
	for _, h := range []string{"X-Forwarded-For", "X-Forwarded-Host", "X-Forwarded-Proto", "Forwarded", "Via"} {
		if v := reqs[1].Header.Values(h); len(v) > 0 {
			t.Errorf("the proxy added %s: %q", h, v)
		}
	}
	// The tapped stream counted once; the direct read is not seen.
	e.waitMetric(t, `amy_turns_finished_total{outcome="completed"}`, 1)
	want := recordedCounts(1)
	want[`amy_stream_duplicate_events_total`] = 0
	checkMetrics(t, metrics(t, e.reg), reconnects(want, nil))

	// A refusal passes through untouched and is not tapped.
	bad := call(t, e.ctx, "GET", px.URL+"/v1/turns/turn_p/events", "Bearer "+wrongKey, "")
	if bad.status != http.StatusUnauthorized || !strings.Contains(string(bad.body), "Unauthorized") {
		t.Errorf("refusal through the proxy: %d %s", bad.status, bad.body)
	}
	checkMetrics(t, metrics(t, e.reg), want)
}

// (f) Two clients reading a turn through the proxy while the exporter
// follows it: every event counts once.
func TestProxyReadersAndFollowerCountOnce(t *testing.T) {
	e, px := newProxyEnv(t)
	// The three connections meet after event 5, so they really overlap.
	e.amy.addTurn("turn_f", recording(t), connPlan{Keepalive: true, HoldAfter: 5, Release: make(chan struct{}), Barrier: 3})
	var wg sync.WaitGroup
	bodies := make([][]byte, 2)
	for i := range bodies {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := call(t, e.ctx, "GET", px.URL+"/v1/turns/turn_f/events", "Bearer "+clientKey, "")
			bodies[i] = r.body
		}()
	}
	waitFor(t, "both readers", func() (int, bool) { n := e.amy.count("turn_f"); return n, n == 2 })
	e.follow("turn_f")
	wg.Wait()
	e.waitMetric(t, `amy_turns_finished_total{outcome="completed"}`, 1)
	waitStopped(t, e.client)

	reqs := e.amy.requestsFor("turn_f")
	if len(reqs) != 3 {
		t.Fatalf("%d connections, want 3", len(reqs))
	}
	follower := reqs[2]
	if follower.Auth != "Bearer "+goodKey {
		t.Errorf("the follower used %q", follower.Auth)
	}
	// Every delivery of an event after the first is a duplicate (the bad
	// event 20 included): 30 + 30 + what the follower was sent after its
	// resume point.
	resumed := 0
	if follower.LastEventID != "" {
		resumed = atoi(t, follower.LastEventID)
	}
	want := recordedCounts(1)
	want[`amy_stream_duplicate_events_total`] = float64(30 + 30 + (30 - resumed) - 30)
	// A tap may still be parsing what its client has already read.
	e.waitMetric(t, `amy_stream_duplicate_events_total`, want[`amy_stream_duplicate_events_total`])
	checkMetrics(t, metrics(t, e.reg), reconnects(want, nil))

	direct := call(t, e.ctx, "GET", e.srv.URL+"/v1/turns/turn_f/events", "Bearer "+clientKey, "")
	for i, b := range bodies {
		if !bytes.Equal(b, direct.body) {
			t.Errorf("reader %d got %d bytes, the direct read %d", i, len(b), len(direct.body))
		}
	}
}

func atoi(t *testing.T, s string) int {
	n := 0
	for _, c := range s {
		if c < '0' || c > '9' {
			t.Fatalf("not a number: %q", s)
		}
		n = n*10 + int(c-'0')
	}
	return n
}

// (f) A turn created through the proxy is followed with the creating
// client's own Authorization, even though the answer came compressed.
func TestProxyFollowsCreatedTurnWithClientAuth(t *testing.T) {
	e, px := newProxyEnv(t)
	r := call(t, e.ctx, "POST", px.URL+"/v1/turns", "Bearer "+clientKey, `{"messages":[{"role":"user","content":"How's my recovery?"}]}`)
	if r.status != http.StatusCreated || string(r.body) != `{"id":"turn_new","status":"running"}` {
		t.Fatalf("create through the proxy: %d %q", r.status, r.body)
	}
	if r.header.Get("Content-Length") != "" && r.header.Get("Content-Encoding") == "" {
		t.Errorf("the compressed answer was not passed through: %v", r.header)
	}
	e.waitMetric(t, `amy_turns_finished_total{outcome="completed"}`, 1)
	waitStopped(t, e.client)
	reqs := e.amy.requestsFor("turn_new")
	if len(reqs) == 0 {
		t.Fatal("turn_new was not followed")
	}
	for _, q := range reqs {
		if q.Auth != "Bearer "+clientKey {
			t.Errorf("turn_new followed with %q, want the client's Authorization", q.Auth)
		}
	}
	checkMetrics(t, metrics(t, e.reg), reconnects(recordedCounts(1), nil))

	// A refused create is not followed.
	e.amy.mu.Lock()
	delete(e.amy.turns, "turn_new")
	e.amy.mu.Unlock()
	r = call(t, e.ctx, "POST", px.URL+"/v1/turns", "Bearer "+wrongKey, `{}`)
	if r.status != http.StatusUnauthorized {
		t.Fatalf("status %d", r.status)
	}
	time.Sleep(50 * time.Millisecond)
	waitStopped(t, e.client)
	if n := e.amy.count("turn_new"); n != len(reqs) {
		t.Errorf("a refused create was followed")
	}
}

// (f) A client that goes away mid-stream cancels the upstream request.
func TestProxyClientCancellationReachesUpstream(t *testing.T) {
	e, px := newProxyEnv(t)
	e.amy.addTurn("turn_c", recording(t), connPlan{HoldAfter: 3, Release: make(chan struct{})})
	ctx, cancel := context.WithCancel(e.ctx)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", px.URL+"/v1/turns/turn_c/events", nil)
	req.Header.Set("Authorization", "Bearer "+goodKey)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	p := sse.NewParser(resp.Body, sse.Options{})
	for i := 0; i < 3; i++ {
		if _, err := p.Next(); err != nil {
			t.Fatal(err)
		}
	}
	reqs := e.amy.requestsFor("turn_c")
	select {
	case <-reqs[0].Gone:
		t.Fatal("upstream request ended before the client went")
	default:
	}
	cancel()
	select {
	case <-reqs[0].Gone:
	case <-time.After(10 * time.Second):
		t.Fatal("the upstream request was not cancelled when the client went away")
	}
	e.waitMetric(t, `amy_events_total{event="phase"}`, 2)
	checkMetrics(t, metrics(t, e.reg), map[string]float64{
		`amy_turns_in_flight`:     1,
		`amy_turns_started_total`: 1,
	})
}

// A compressed event stream is tapped too (the client's transport asked
// for gzip and decompresses it; the tap must as well).
func TestProxyTapsCompressedStream(t *testing.T) {
	e, px := newProxyEnv(t)
	e.amy.addTurn("turn_z", recording(t), connPlan{Gzip: true, SplitData: true})
	proxied := call(t, e.ctx, "GET", px.URL+"/v1/turns/turn_z/events", "Bearer "+goodKey, "")
	direct := call(t, e.ctx, "GET", e.srv.URL+"/v1/turns/turn_z/events", "Bearer "+goodKey, "")
	if !bytes.Equal(proxied.body, direct.body) || !bytes.Contains(direct.body, []byte("turn.completed")) {
		t.Fatalf("proxied %d bytes, direct %d", len(proxied.body), len(direct.body))
	}
	e.waitMetric(t, `amy_turns_finished_total{outcome="completed"}`, 1)
	checkMetrics(t, metrics(t, e.reg), reconnects(recordedCounts(1), nil))
}
