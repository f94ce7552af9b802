package api

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	ws "github.com/amp-exporter/amp-exporter/internal/testsupport/workspacetest"
)

// TestOnlyGETReachesTheAPI: the transport refuses any other method under
// /api/v2/ before it is sent; the stand-in counts none.
func TestOnlyGETReachesTheAPI(t *testing.T) {
	f := newFixture(t, ws.Config{Users: 2, Threads: 10}, ws.Options{}, nil)
	for _, m := range []string{http.MethodDelete, http.MethodPost, http.MethodPut, http.MethodPatch} {
		req, err := http.NewRequest(m, f.s.URL+"/api/v2/threads/"+f.s.ThreadID(1, 0), strings.NewReader("{}"))
		if err != nil {
			t.Fatal(err)
		}
		if resp, err := f.c.hc.Do(req); err == nil {
			resp.Body.Close()
			t.Errorf("%s was sent", m)
		}
	}
	if n := f.s.NonGET(); n != 0 {
		t.Fatalf("%d requests other than GET reached the API", n)
	}
	if n := len(f.s.Requests()); n != 0 {
		t.Fatalf("%d requests reached the stand-in", n)
	}
}

// elapsed runs fn and returns how far the fake clock moved.
func (f *fixture) elapsed(t *testing.T, fn func()) time.Duration {
	t.Helper()
	t0 := f.clk.Now()
	f.run(t, fn)
	return f.clk.Now().Sub(t0)
}

// TestRequestBudget: 60 a minute in bursts of 6: 26 requests take 20
// seconds, whichever endpoints they go to.
func TestRequestBudget(t *testing.T) {
	f := newFixture(t, ws.Config{Users: 2, Threads: 20}, ws.Options{}, func(o *Options) { o.MaxRequestsPerMinute = 60 })
	ctx := context.Background()
	d := f.elapsed(t, func() {
		for i := range 26 {
			var err error
			switch i % 3 {
			case 0:
				_, err = f.c.ListThreads(ctx, ListQuery{Limit: 5})
			case 1:
				_, err = f.c.ThreadUsage(ctx, f.s.ThreadID(19, 0))
			default:
				_, err = f.c.DailyUsage(ctx, "", 2)
			}
			if err != nil {
				t.Error(err)
			}
		}
	})
	if d != 20*time.Second {
		t.Fatalf("26 requests took %s, want 20s", d)
	}
	if n := f.rec.total(); n != 27 { // and the token
		t.Fatalf("%d requests made", n)
	}
}

// TestRequestBudgetWaitEndsWithContext: a request waiting for its turn
// gives up when its context ends, and gives the turn back.
func TestRequestBudgetWaitEndsWithContext(t *testing.T) {
	f := newFixture(t, ws.Config{Users: 2, Threads: 20}, ws.Options{}, func(o *Options) { o.MaxRequestsPerMinute = 1 })
	b := f.c.budget
	if err := b.wait(context.Background()); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- b.wait(ctx) }()
	for f.clk.Now().Equal(start) { // wait until it waits
		if func() bool { b.mu.Lock(); defer b.mu.Unlock(); return b.tokens < 0 }() {
			break
		}
		time.Sleep(time.Millisecond)
	}
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("err %v", err)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.tokens != 0 {
		t.Fatalf("tokens %v after the wait gave its turn back, want 0", b.tokens)
	}
}

// TestRetries: 429 waits as Retry-After says (seconds or a date), or
// backs off without it; 5xx back off exponentially; 400, 403 and 404 are
// not retried; attempts are bounded.
func TestRetries(t *testing.T) {
	date := ws.RetryAfterDate(start.Add(30 * time.Second))
	for _, tc := range []struct {
		name     string
		faults   []ws.Fault
		grant    []string
		wait     time.Duration
		requests int
		wantErr  func(error) bool
	}{
		{name: "429 Retry-After seconds", faults: []ws.Fault{{Status: 429, RetryAfter: "7"}}, wait: 7 * time.Second, requests: 2},
		{name: "429 Retry-After date", faults: []ws.Fault{{Status: 429, RetryAfter: date}}, wait: 30 * time.Second, requests: 2},
		{name: "429 Retry-After past date", faults: []ws.Fault{{Status: 429, RetryAfter: ws.RetryAfterDate(start.Add(-time.Hour))}}, wait: 0, requests: 2},
		{name: "429 Retry-After capped", faults: []ws.Fault{{Status: 429, RetryAfter: "86400"}}, wait: 10 * time.Minute, requests: 2},
		// 10s with the jitter at half: 5s + 2.5s, then 20s: 10s + 5s.
		{name: "429 without Retry-After", faults: []ws.Fault{{Status: 429}, {Status: 429}}, wait: 7500*time.Millisecond + 15*time.Second, requests: 3},
		// 500ms: 375ms, then 1s: 750ms.
		{name: "503 twice", faults: []ws.Fault{{Status: 503}, {Status: 500}}, wait: 1125 * time.Millisecond, requests: 3},
		{name: "503 with Retry-After", faults: []ws.Fault{{Status: 503, RetryAfter: "3"}}, wait: 3 * time.Second, requests: 2},
		{name: "5xx until the attempts end", faults: []ws.Fault{{Status: 502}, {Status: 502}, {Status: 502}, {Status: 502}, {Status: 502}},
			wait: (375 + 750 + 1500 + 3000) * time.Millisecond, requests: 5,
			wantErr: func(err error) bool { var se *StatusError; return errors.As(err, &se) && se.Status == 502 }},
		{name: "400 not retried", faults: []ws.Fault{{Status: 400}}, requests: 1,
			wantErr: func(err error) bool { var se *StatusError; return errors.As(err, &se) && se.Status == 400 }},
		{name: "404 not retried", faults: []ws.Fault{{Status: 404}}, requests: 1,
			wantErr: func(err error) bool { return errors.Is(err, ErrNotFound) }},
		{name: "403 not retried", grant: []string{ws.ScopeAnalytics}, requests: 1,
			wantErr: func(err error) bool {
				var se *ScopeError
				return errors.As(err, &se) && se.Endpoint == EndpointThreads && se.Scope == ScopeThreadsMeta
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, ws.Config{Users: 2, Threads: 20}, ws.Options{}, nil)
			if tc.grant != nil {
				f.s.Grant(tc.grant...)
			}
			if err := f.c.Token(context.Background()); err != nil {
				t.Fatal(err)
			}
			f.s.Fail(ws.RouteThreads, tc.faults...)
			var err error
			d := f.elapsed(t, func() { _, err = f.c.ListThreads(context.Background(), ListQuery{Limit: 5}) })
			if tc.wantErr == nil && err != nil || tc.wantErr != nil && !tc.wantErr(err) {
				t.Fatalf("err %v", err)
			}
			if d != tc.wait {
				t.Errorf("waited %s, want %s", d, tc.wait)
			}
			if n := f.s.Count(ws.RouteThreads); n != tc.requests {
				t.Errorf("%d requests, want %d", n, tc.requests)
			}
		})
	}
}

// TestBodiesBounded: an answer over its endpoint's bound is an error
// naming the endpoint and the reason, read no further.
func TestBodiesBounded(t *testing.T) {
	f := newFixture(t, ws.Config{Users: 2, Threads: 20}, ws.Options{}, func(o *Options) { o.Limits = Limits{Listing: 1000, Usage: 100, Daily: 1000} })
	ctx := context.Background()
	var errs [3]error
	f.run(t, func() {
		_, errs[0] = f.c.ListThreads(ctx, ListQuery{Limit: 50})
		_, errs[1] = f.c.ThreadUsage(ctx, f.s.ThreadID(19, 0))
		_, errs[2] = f.c.DailyUsage(ctx, "", 30)
	})
	for i, e := range []string{EndpointThreads, EndpointThreadUsage, EndpointDailyUsage} {
		var ae *AnswerError
		if !errors.As(errs[i], &ae) || ae.Endpoint != e || ae.Reason != ReasonTooLarge {
			t.Errorf("%s: %v", e, errs[i])
		}
	}
	// Counted by the client's hook: the stand-in may log a request it is
	// still writing after the client stopped reading it.
	for _, e := range []string{EndpointToken, EndpointThreads, EndpointThreadUsage, EndpointDailyUsage} {
		if n := f.rec.request(e, "200"); n != 1 {
			t.Errorf("%s: %d requests, want 1 (none retried)", e, n)
		}
	}
}

// TestThreadIDInThePath: an id is percent-encoded into its one path
// segment; one out of bounds is refused before any request.
func TestThreadIDInThePath(t *testing.T) {
	var mu sync.Mutex
	var paths []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/oauth2/token" {
			_, _ = io.WriteString(w, `{"access_token":"t","token_type":"Bearer","expires_in":3600}`)
			return
		}
		mu.Lock()
		paths = append(paths, r.URL.EscapedPath())
		mu.Unlock()
		w.WriteHeader(404)
	}))
	defer srv.Close()
	c, err := New(Options{APIURL: srv.URL, TokenURL: srv.URL + "/oauth2/token", ClientID: "i", ClientSecret: "s"})
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"T-1/../../workspace", "T-2?x=1#f", "T-3 %2F"} {
		if _, err := c.ThreadUsage(context.Background(), id); !errors.Is(err, ErrNotFound) {
			t.Errorf("%q: %v", id, err)
		}
	}
	for _, id := range []string{"", strings.Repeat("x", MaxIDBytes+1), "T-\n1", "T-\xff"} {
		if _, err := c.ThreadUsage(context.Background(), id); err == nil || errors.Is(err, ErrNotFound) {
			t.Errorf("%q: %v, want refused", id, err)
		}
	}
	want := []string{"/api/v2/threads/T-1%2F..%2F..%2Fworkspace/usage", "/api/v2/threads/T-2%3Fx=1%23f/usage", "/api/v2/threads/T-3%20%252F/usage"}
	mu.Lock()
	defer mu.Unlock()
	if strings.Join(paths, " ") != strings.Join(want, " ") {
		t.Fatalf("paths %q, want %q", paths, want)
	}
}

// TestCursors: an absent, null or empty cursor ends the listing; a
// repeated one ends it with an anomaly.
func TestCursors(t *testing.T) {
	for _, tc := range []struct {
		name     string
		pages    []string // answers in turn
		requests int
		repeated int
	}{
		{"absent", []string{`{"threads":[],"nextCursor":"a"}`, `{"threads":[]}`}, 2, 0},
		{"null", []string{`{"threads":[],"nextCursor":"a"}`, `{"threads":[],"nextCursor":null}`}, 2, 0},
		{"empty", []string{`{"threads":[],"nextCursor":""}`}, 1, 0},
		{"the same again", []string{`{"threads":[],"nextCursor":"a"}`, `{"threads":[],"nextCursor":"a"}`}, 2, 1},
		{"an earlier one", []string{`{"threads":[],"nextCursor":"a"}`, `{"threads":[],"nextCursor":"b"}`, `{"threads":[],"nextCursor":"a"}`}, 3, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var mu sync.Mutex
			n := 0
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.URL.Path == "/oauth2/token" {
					_, _ = io.WriteString(w, `{"access_token":"t","token_type":"Bearer","expires_in":3600}`)
					return
				}
				mu.Lock()
				defer mu.Unlock()
				_, _ = io.WriteString(w, tc.pages[min(n, len(tc.pages)-1)])
				n++
			}))
			defer srv.Close()
			rec := newRecorder()
			c, err := New(Options{APIURL: srv.URL, TokenURL: srv.URL + "/oauth2/token", ClientID: "i", ClientSecret: "s", Hooks: rec.hooks()})
			if err != nil {
				t.Fatal(err)
			}
			if err := c.ListAll(context.Background(), ListQuery{}, func(ThreadPage) error { return nil }); err != nil {
				t.Fatal(err)
			}
			mu.Lock()
			defer mu.Unlock()
			if n != tc.requests || rec.anomaly(EndpointThreads, ReasonRepeatedCursor) != tc.repeated {
				t.Fatalf("%d requests, %d repeated", n, rec.anomaly(EndpointThreads, ReasonRepeatedCursor))
			}
		})
	}
}
