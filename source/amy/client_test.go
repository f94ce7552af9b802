package amy

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/amp-exporter/amp-exporter/config"
)

var reconnectReasons = []string{"eof", "error", "http_5xx", "http_429", "unauthorized", "idle_timeout"}

// reconnects is the want-map of amy_stream_reconnects_total, zero but for
// the given reasons.
func reconnects(m map[string]float64, nonZero map[string]float64) map[string]float64 {
	for _, r := range reconnectReasons {
		m[fmt.Sprintf("amy_stream_reconnects_total{reason=%q}", r)] = nonZero[r]
	}
	return m
}

// (a) A turn followed through a clean close mid-turn, a 503, a broken
// connection, overlapping replays and every framing variant is counted
// exactly once.
func TestFollowTurnThroughFaults(t *testing.T) {
	e := newEnv(t, envOpts{fake: true, auto: true})
	e.amy.addTurn("turn_a", recording(t), connPlan{},
		// LF, a retry field, keepalives; closed cleanly after id 8.
		connPlan{Retry: "100", Keepalive: true, StopAfter: 8},
		connPlan{Status: http.StatusServiceUnavailable, RetryAfter: "1"},
		// CRLF, data split over lines; replays 7 and 8; after id 20 (bad
		// data) half an event and a broken connection.
		connPlan{Overlap: 2, CRLF: true, SplitData: true, Keepalive: true, AbortAfter: 20},
		// CR only; replays 19 and 20 (the bad one) again.
		connPlan{Overlap: 2, CR: true, SplitData: true},
	)
	e.follow("turn_a")
	e.follow("turn_a") // already followed: no second follower
	e.waitMetric(t, `amy_turns_finished_total{outcome="completed"}`, 1)
	waitStopped(t, e.client)

	want := recordedCounts(1)
	want[`amy_stream_duplicate_events_total`] = 4 // 7, 8, 19, 20
	want[`amy_stream_up`] = 1
	want[`amy_turns_given_up_total{reason="timeout"}`] = 0
	want[`amy_turns_given_up_total{reason="not_found"}`] = 0
	reconnects(want, map[string]float64{"eof": 1, "http_5xx": 1, "error": 1})
	checkMetrics(t, metrics(t, e.reg), want)

	reqs := e.amy.requestsFor("turn_a")
	var ids []string
	for _, r := range reqs {
		ids = append(ids, r.LastEventID)
		if r.Auth != "Bearer "+goodKey || r.Header.Get("Accept") != "text/event-stream" {
			t.Errorf("request headers %v", r.Header)
		}
	}
	// Resumes after the last event delivered: not after the id of the half
	// event the broken connection carried (21), and past the bad event 20.
	if got := strings.Join(ids, ","); got != ",8,8,20" {
		t.Errorf("Last-Event-ID per connection %q, want \",8,8,20\"", got)
	}
	if reqs[2].At.Sub(reqs[1].At) < time.Second {
		t.Errorf("reconnected %v after a 503 with Retry-After: 1", reqs[2].At.Sub(reqs[1].At))
	}
	// Following the turn again once it ended does nothing.
	e.follow("turn_a")
	waitStopped(t, e.client)
	if n := e.amy.count("turn_a"); n != 4 {
		t.Errorf("%d connections, want 4", n)
	}
}

// The retry field and Retry-After set the wait before the next connection,
// within a bound.
func TestRetryAndRetryAfterAreHonoured(t *testing.T) {
	for _, tc := range []struct {
		name   string
		first  connPlan
		want   time.Duration
		reason string
	}{
		{"retry field", connPlan{Retry: "20000", StopAfter: 3}, 20 * time.Second, "eof"},
		{"retry field capped", connPlan{Retry: "99999999999", StopAfter: 3}, 10 * backoffMax, "eof"},
		{"429 Retry-After seconds", connPlan{Status: http.StatusTooManyRequests, RetryAfter: "120"}, 120 * time.Second, "http_429"},
		{"503 Retry-After date", connPlan{Status: http.StatusServiceUnavailable, RetryAfter: epoch.Add(90 * time.Second).Format(http.TimeFormat)}, 90 * time.Second, "http_5xx"},
		{"Retry-After capped", connPlan{Status: http.StatusServiceUnavailable, RetryAfter: "86400"}, 10 * backoffMax, "http_5xx"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, envOpts{fake: true, auto: true})
			e.amy.addTurn("turn_r", recording(t), connPlan{}, tc.first)
			e.follow("turn_r")
			e.waitMetric(t, `amy_turns_finished_total{outcome="completed"}`, 1)
			waitStopped(t, e.client)
			reqs := e.amy.requestsFor("turn_r")
			if len(reqs) != 2 {
				t.Fatalf("%d connections, want 2", len(reqs))
			}
			if gap := reqs[1].At.Sub(reqs[0].At); gap != tc.want {
				t.Errorf("waited %v before reconnecting, want %v", gap, tc.want)
			}
			checkMetrics(t, metrics(t, e.reg), reconnects(map[string]float64{
				`amy_turns_given_up_total{reason="timeout"}`: 0,
				`amy_stream_duplicate_events_total`:          0,
			}, map[string]float64{tc.reason: 1}))
		})
	}
}

// (b) A refused key is reported once, marks the upstream down, and is
// retried only every five minutes.
func TestRefusedKeyIsReportedOnceAndNotHammered(t *testing.T) {
	for _, tc := range []struct {
		name   string
		key    string
		status int
	}{
		{"wrong key", wrongKey, http.StatusUnauthorized},
		{"revoked key", revokedKey, http.StatusForbidden},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, envOpts{fake: true, key: tc.key})
			e.amy.addTurn("turn_b", recording(t), connPlan{})
			e.follow("turn_b")
			const rounds = 4
			for i := 1; i <= rounds; i++ {
				d := e.clk.waitTimer(t, "sleep", isSleep)
				if d != 5*time.Minute {
					t.Fatalf("sleeps %v after a %d, want 5m", d, tc.status)
				}
				if n := e.amy.count("turn_b"); n != i {
					t.Fatalf("%d requests after %d sleeps", n, i-1)
				}
				checkMetrics(t, metrics(t, e.reg), map[string]float64{
					`amy_stream_up`: 0,
					`amy_stream_reconnects_total{reason="unauthorized"}`: float64(i),
				})
				// Nothing is sent before the five minutes are over.
				e.clk.Advance(d - time.Second)
				time.Sleep(20 * time.Millisecond)
				if n := e.amy.count("turn_b"); n != i {
					t.Fatalf("%d requests within 5 minutes", n)
				}
				e.clk.Advance(time.Second)
			}
			// The stand-in records a request as it arrives and its status as
			// it answers: wait for the answer too.
			waitFor(t, "the next request, answered", func() (int, bool) {
				reqs := e.amy.requestsFor("turn_b")
				return len(reqs), len(reqs) == rounds+1 && reqs[rounds].Status != 0
			})
			reqs := e.amy.requestsFor("turn_b")
			for i := 1; i < len(reqs); i++ {
				if gap := reqs[i].At.Sub(reqs[i-1].At); gap < 5*time.Minute {
					t.Errorf("requests %d and %d %v apart", i-1, i, gap)
				}
				if reqs[i].Status != tc.status {
					t.Errorf("status %d", reqs[i].Status)
				}
			}
			e.cancel()
			waitStopped(t, e.client)
			errs := e.logs.Lines(`"level":"ERROR"`)
			if len(errs) != 1 || !strings.Contains(errs[0], fmt.Sprintf(`"status":%d`, tc.status)) || !strings.Contains(errs[0], `"upstream":"amy-test"`) {
				t.Errorf("want the refusal logged once at error level, got %q", errs)
			}
			if n := len(e.logs.Lines(fmt.Sprint(tc.status))); n != 1 {
				t.Errorf("the %d appears in %d log lines, want 1:\n%s", tc.status, n, e.logs)
			}
		})
	}
}

// (c) A turn the server does not know (past the replay window) is given
// up, and the follower stops.
func TestNotFoundGivesUp(t *testing.T) {
	t.Run("unknown turn", func(t *testing.T) {
		e := newEnv(t, envOpts{fake: true, auto: true})
		e.follow("turn_gone")
		waitStopped(t, e.client)
		checkMetrics(t, metrics(t, e.reg), reconnects(map[string]float64{
			`amy_turns_given_up_total{reason="not_found"}`: 1,
			`amy_turns_given_up_total{reason="timeout"}`:   0,
			`amy_turns_started_total`:                      0,
			`amy_turns_in_flight`:                          0,
		}, nil))
		if n := e.amy.count("turn_gone"); n != 1 {
			t.Errorf("%d requests for a turn that does not exist, want 1", n)
		}
		// Not followed again.
		e.follow("turn_gone")
		waitStopped(t, e.client)
		if n := e.amy.count("turn_gone"); n != 1 {
			t.Errorf("followed again after a 404: %d requests", n)
		}
		if len(e.logs.Lines("not found", "turn_gone")) != 1 {
			t.Errorf("want one log line for the 404:\n%s", e.logs)
		}
	})
	t.Run("turn expires mid-follow", func(t *testing.T) {
		e := newEnv(t, envOpts{fake: true, auto: true})
		e.amy.addTurn("turn_x", recording(t), connPlan{},
			connPlan{StopAfter: 5}, connPlan{Status: http.StatusNotFound})
		e.follow("turn_x")
		waitStopped(t, e.client)
		checkMetrics(t, metrics(t, e.reg), reconnects(map[string]float64{
			`amy_turns_given_up_total{reason="not_found"}`:  1,
			`amy_turns_started_total`:                       1,
			`amy_turns_in_flight`:                           0,
			`amy_turns_finished_total{outcome="completed"}`: 0,
			`amy_events_total{event="phase"}`:               2,
		}, map[string]float64{"eof": 1}))
		if n := e.amy.count("turn_x"); n != 2 {
			t.Errorf("%d requests, want 2", n)
		}
	})
}

// (d) turn_timeout gives a turn up, whether the server keeps failing or
// keeps a stream open without the turn ever ending.
func TestTurnTimeoutGivesUp(t *testing.T) {
	t.Run("server keeps failing", func(t *testing.T) {
		const timeout = 10 * time.Minute
		e := newEnv(t, envOpts{fake: true, auto: true, turnTimeout: timeout})
		e.amy.addTurn("turn_t", recording(t), connPlan{Status: http.StatusServiceUnavailable})
		e.follow("turn_t")
		waitStopped(t, e.client)
		n := e.amy.count("turn_t")
		checkMetrics(t, metrics(t, e.reg), reconnects(map[string]float64{
			`amy_turns_given_up_total{reason="timeout"}`:   1,
			`amy_turns_given_up_total{reason="not_found"}`: 0,
			`amy_stream_up`: 0,
		}, map[string]float64{"http_5xx": float64(n)}))
		if now := e.clk.Now(); now.Before(epoch.Add(timeout)) {
			t.Errorf("given up at %v, before turn_timeout", now.Sub(epoch))
		}
		// Capped backoff: 10 minutes is at least 20 attempts at 30 s.
		if n < 20 {
			t.Errorf("only %d attempts in 10 minutes", n)
		}
		if reqs := e.amy.requestsFor("turn_t"); reqs[len(reqs)-1].At.After(epoch.Add(timeout)) {
			t.Error("a request after turn_timeout")
		}
	})
	t.Run("stream stuck open", func(t *testing.T) {
		const timeout = 2 * time.Minute
		e := newEnv(t, envOpts{fake: true, turnTimeout: timeout})
		steps := make(chan struct{})
		e.amy.addTurn("turn_s", recording(t), connPlan{}, connPlan{Steps: steps, StepsAfter: 1})
		e.follow("turn_s")
		e.clk.waitTimer(t, "idle watchdog", func(d time.Duration) bool { return d == idleTimeout })
		e.waitMetric(t, `amy_turns_in_flight`, 1)
		// A comment every 15 s keeps the connection alive for 8 × 15 s =
		// turn_timeout.
		n := e.clk.resets.Load()
		for i := 0; i < 8; i++ {
			steps <- struct{}{}
			n = e.clk.waitReset(t, n)
			e.clk.Advance(15 * time.Second)
		}
		waitStopped(t, e.client)
		checkMetrics(t, metrics(t, e.reg), reconnects(map[string]float64{
			`amy_turns_given_up_total{reason="timeout"}`: 1,
			`amy_turns_in_flight`:                        0,
			`amy_turns_started_total`:                    1,
		}, nil))
		reqs := e.amy.requestsFor("turn_s")
		if len(reqs) != 1 {
			t.Fatalf("%d requests, want 1", len(reqs))
		}
		select {
		case <-reqs[0].Gone:
		case <-time.After(10 * time.Second):
			t.Error("the stuck connection was not closed")
		}
		if len(e.logs.Lines("turn_timeout", "turn_s")) != 1 {
			t.Errorf("want one log line for the timeout:\n%s", e.logs)
		}
	})
}

// (e) The idle watchdog reconnects a silent stream, and only a silent one:
// keepalive comments are activity.
func TestIdleWatchdog(t *testing.T) {
	t.Run("silent stream", func(t *testing.T) {
		e := newEnv(t, envOpts{fake: true})
		e.amy.addTurn("turn_i", recording(t), connPlan{}, connPlan{Silent: true})
		e.follow("turn_i")
		e.clk.waitTimer(t, "idle watchdog", func(d time.Duration) bool { return d == idleTimeout })
		e.clk.Advance(idleTimeout - time.Second)
		time.Sleep(20 * time.Millisecond)
		if n := e.amy.count("turn_i"); n != 1 || e.metric(t, `amy_stream_reconnects_total{reason="idle_timeout"}`) != 0 {
			t.Fatalf("reconnected before idle_timeout (%d requests)", n)
		}
		e.clk.Advance(time.Second)
		d := e.clk.waitTimer(t, "sleep", isSleep)
		e.clk.Advance(d)
		e.waitMetric(t, `amy_turns_finished_total{outcome="completed"}`, 1)
		waitStopped(t, e.client)
		checkMetrics(t, metrics(t, e.reg), reconnects(recordedCounts(1), map[string]float64{"idle_timeout": 1}))
		reqs := e.amy.requestsFor("turn_i")
		if len(reqs) != 2 {
			t.Fatalf("%d requests, want 2", len(reqs))
		}
		select {
		case <-reqs[0].Gone:
		default:
			t.Error("the silent connection was not closed by the client")
		}
	})
	t.Run("keepalive comments only", func(t *testing.T) {
		e := newEnv(t, envOpts{fake: true})
		steps := make(chan struct{})
		e.amy.addTurn("turn_k", recording(t), connPlan{}, connPlan{Steps: steps, StepsAfter: 3})
		e.follow("turn_k")
		e.clk.waitTimer(t, "idle watchdog", func(d time.Duration) bool { return d == idleTimeout })
		e.waitMetric(t, `amy_events_total{event="phase"}`, 2)
		// 12 comments 15 s apart: 4 × idle_timeout without an event.
		n := e.clk.resets.Load()
		for i := 0; i < 12; i++ {
			steps <- struct{}{}
			n = e.clk.waitReset(t, n)
			e.clk.Advance(idleTimeout / 3)
		}
		close(steps)
		e.waitMetric(t, `amy_turns_finished_total{outcome="completed"}`, 1)
		waitStopped(t, e.client)
		checkMetrics(t, metrics(t, e.reg), reconnects(recordedCounts(1), nil))
		if n := e.amy.count("turn_k"); n != 1 {
			t.Errorf("%d requests, want 1", n)
		}
	})
}

// (g) The configuration as /config renders it hides the key, whether
// written in the file or taken from the environment.
func TestConfigRenderingHidesKey(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "config.yaml")
	err := os.WriteFile(path, []byte(`amy:
  - name: prod
    base_url: https://amy.example.com
    api_key: `+goodKey+`
  - name: staging
    base_url: https://amy-staging.example.com
    api_key: ${AMY_STAGING_KEY}
`), 0o600)
	if err != nil {
		t.Fatal(err)
	}
	env := config.Env{Getenv: func(k string) string {
		if k == "AMY_STAGING_KEY" {
			return clientKey
		}
		return ""
	}, Home: dir}
	cfg, err := config.Load(path, env)
	if err != nil {
		t.Fatal(err)
	}
	if string(cfg.Amy[1].APIKey) != clientKey {
		t.Fatalf("the environment key was not expanded: %q", cfg.Amy[1].APIKey)
	}
	out := cfg.String()
	for _, k := range []string{goodKey, clientKey, "AMY_STAGING_KEY"} {
		if strings.Contains(out, k) {
			t.Errorf("%q appears in the rendered config:\n%s", k, out)
		}
	}
	if strings.Count(out, "<secret>") != 2 {
		t.Errorf("want both keys rendered as <secret>:\n%s", out)
	}
}

func TestRetryAfterParsing(t *testing.T) {
	now := epoch
	for _, tc := range []struct {
		h    string
		want time.Duration
	}{
		{"", 0}, {"0", 0}, {"1", time.Second}, {" 7 ", 7 * time.Second}, {"-3", 0}, {"1.5", 0}, {"soon", 0},
		{"86400", 10 * backoffMax},
		{now.Add(42 * time.Second).Format(http.TimeFormat), 42 * time.Second},
		{now.Add(-time.Hour).Format(http.TimeFormat), 0},
	} {
		if got := retryAfter(tc.h, now); got != tc.want {
			t.Errorf("retryAfter(%q) = %v, want %v", tc.h, got, tc.want)
		}
	}
}

func TestBackoffIsCappedWithJitter(t *testing.T) {
	for attempt := 1; attempt <= 40; attempt++ {
		ceil := min(backoffMin<<min(attempt, 10), backoffMax)
		lo, hi := ceil, time.Duration(0)
		for i := 0; i < 200; i++ {
			d := backoff(attempt)
			lo, hi = min(lo, d), max(hi, d)
		}
		if lo < ceil/2 || hi > ceil {
			t.Errorf("attempt %d: backoff in [%v, %v], want within [%v, %v]", attempt, lo, hi, ceil/2, ceil)
		}
		if hi-lo < ceil/10 {
			t.Errorf("attempt %d: no jitter ([%v, %v])", attempt, lo, hi)
		}
	}
}
