package otlp

import (
	"net/http"
	"sync"
	"testing"
	"time"
)

// A Retry-After longer than what is left of the push's interval drops
// that push, and is still honoured: no request reaches the receiver before
// the time it asked for. A push due earlier waits until then and sends
// what the registry holds at that time (nothing old replayed), or, when
// even its own interval ends first, is dropped without a request.
func TestRetryAfterCarriesOverToTheNextPush(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name       string
		retryAfter string
		pushes     []string        // results, one push every interval
		requests   []time.Duration // when each request is made, after start
	}{
		{name: "past the interval, within the next", retryAfter: "3",
			pushes: []string{ResultDropped, ResultSent}, requests: []time.Duration{0, 3 * time.Second}},
		{name: "past the next interval too", retryAfter: "5",
			pushes: []string{ResultDropped, ResultDropped, ResultSent}, requests: []time.Duration{0, 5 * time.Second}},
		{name: "as an HTTP date", retryAfter: start.Add(3 * time.Second).Format(http.TimeFormat),
			pushes: []string{ResultDropped, ResultSent}, requests: []time.Duration{0, 3 * time.Second}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var (
				mu  sync.Mutex
				at  []time.Time
				f   *fixture
				clk = make(chan struct{})
			)
			rcv := newReceiver(t, func(n int) (int, http.Header, []byte) {
				<-clk // f is set
				mu.Lock()
				at = append(at, f.clk.Now())
				mu.Unlock()
				if n == 1 {
					return http.StatusTooManyRequests, http.Header{"Retry-After": {tc.retryAfter}}, nil
				}
				return http.StatusOK, nil, nil
			})
			f = newFixture(t, rcv.srv.URL, func(o *Options) { o.Interval = 2 * time.Second })
			close(clk)
			f.tokens.WithLabelValues("claude").Add(1)
			for i, want := range tc.pushes {
				if i > 0 {
					f.clk.Advance(start.Add(time.Duration(i) * 2 * time.Second).Sub(f.clk.Now()))
					f.tokens.WithLabelValues("claude").Add(1)
				}
				if got := f.push(t); got != want {
					t.Fatalf("push %d: %s, want %s", i, got, want)
				}
			}
			mu.Lock()
			defer mu.Unlock()
			if len(at) != len(tc.requests) {
				t.Fatalf("%d requests at %v, want %d", len(at), at, len(tc.requests))
			}
			for i, want := range tc.requests {
				if got := at[i].Sub(start); got != want {
					t.Errorf("request %d at +%v, want +%v", i, got, want)
				}
			}
			// The push that went through carries the registry of when it
			// was sent, not of when it was due.
			ps := points(rcv.last(), "amp_tokens_total")
			sentAt := start.Add(tc.requests[len(tc.requests)-1])
			if len(ps) != 1 || ps[0].time != sentAt.UnixNano() || ps[0].value != float64(len(tc.pushes)) {
				t.Errorf("points %+v, want %d at %v", ps, len(tc.pushes), sentAt)
			}
			if got, want := f.points(ResultDropped), float64(len(tc.pushes)-1); got != want {
				t.Errorf("dropped %v points, want %v", got, want)
			}
		})
	}
}
