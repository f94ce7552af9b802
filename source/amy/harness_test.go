package amy

import (
	"context"
	"fmt"
	"log/slog"
	"net/http/httptest"
	"net/url"
	"sort"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/amp-exporter/amp-exporter/collector"
	"github.com/amp-exporter/amp-exporter/internal/clock"
	"github.com/amp-exporter/amp-exporter/internal/testsupport/testutil"
	"github.com/amp-exporter/amp-exporter/store"
)

const (
	upName      = "amy-test"
	idleTimeout = 45 * time.Second
	turnTimeout = time.Hour
)

var epoch = time.Date(2025, 6, 3, 9, 14, 0, 0, time.UTC)

// testClock is a clock.Fake that reports the timers made and reset, so a
// test knows when the client sleeps and when its idle watchdog was fed.
type testClock struct {
	*clock.Fake
	timers chan time.Duration // the duration of every NewTimer
	resets atomic.Int64       // Reset calls so far
}

func newTestClock() *testClock {
	return &testClock{Fake: clock.NewFake(epoch), timers: make(chan time.Duration, 1<<16)}
}

func (c *testClock) NewTimer(d time.Duration) clock.Timer {
	t := c.Fake.NewTimer(d)
	select {
	case c.timers <- d:
	default:
		panic("testClock: timers channel full")
	}
	return &testTimer{Timer: t, c: c}
}

type testTimer struct {
	clock.Timer
	c *testClock
}

func (t *testTimer) Reset(d time.Duration) {
	t.Timer.Reset(d)
	t.c.resets.Add(1)
}

// waitTimer returns the duration of the next timer made that keep accepts,
// dropping the others.
func (c *testClock) waitTimer(t *testing.T, what string, keep func(time.Duration) bool) time.Duration {
	t.Helper()
	deadline := time.After(10 * time.Second)
	for {
		select {
		case d := <-c.timers:
			if keep(d) {
				return d
			}
		case <-deadline:
			t.Fatalf("no %s timer was made", what)
		}
	}
}

func isSleep(d time.Duration) bool { return d != idleTimeout && d != turnTimeout }

// autoAdvance moves the clock through every sleep of the client (any timer
// but the idle watchdog and turn_timeout) as soon as it starts.
func (c *testClock) autoAdvance(ctx context.Context, turnTimeout time.Duration) {
	go func() {
		for {
			select {
			case <-ctx.Done():
				return
			case d := <-c.timers:
				if d != idleTimeout && d != turnTimeout {
					c.Advance(d)
				}
			}
		}
	}()
}

// waitReset waits until the idle watchdog was reset after n resets.
func (c *testClock) waitReset(t *testing.T, n int64) int64 {
	t.Helper()
	return waitFor(t, "an idle watchdog reset", func() (int64, bool) {
		r := c.resets.Load()
		return r, r > n
	})
}

// env is an Amy stand-in, a store with its collector in a registry, and a
// client, logging JSON at debug level into a buffer that must never hold a
// key.
type env struct {
	amy    *standIn
	srv    *httptest.Server
	store  *store.AmyStore
	reg    *prometheus.Registry
	clk    *testClock // nil: the real clock
	client *Client
	logs   *testutil.SyncBuffer
	log    *slog.Logger
	up     Upstream
	ctx    context.Context
	cancel context.CancelFunc
}

type envOpts struct {
	fake        bool          // a testClock instead of the real clock
	auto        bool          // advance the fake clock through sleeps
	key         string        // the upstream's key (goodKey when empty)
	turnTimeout time.Duration // turnTimeout when 0
}

func newEnv(t *testing.T, o envOpts) *env {
	e := &env{logs: &testutil.SyncBuffer{}}
	e.log = slog.New(slog.NewJSONHandler(e.logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	var clk clock.Clock = clock.Real{}
	if o.fake {
		e.clk = newTestClock()
		clk = e.clk
	}
	e.amy = newStandIn(t, clk)
	e.srv = httptest.NewServer(e.amy)
	base, err := url.Parse(e.srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	if o.key == "" {
		o.key = goodKey
	}
	if o.turnTimeout == 0 {
		o.turnTimeout = turnTimeout
	}
	e.up = Upstream{Name: upName, BaseURL: base, APIKey: o.key, IdleTimeout: idleTimeout, TurnTimeout: o.turnTimeout}
	e.store = store.NewAmyStore(store.NewLabelCap(100, nil), func() time.Time { return clk.Now() })
	e.store.SetUpstreams([]string{upName})
	e.reg = prometheus.NewPedanticRegistry()
	e.reg.MustRegister(collector.NewAmyCollector(e.store))
	e.client = NewClient(e.store, e.log, nil, clk)
	e.ctx, e.cancel = context.WithCancel(context.Background())
	if o.fake && o.auto {
		e.clk.autoAdvance(e.ctx, o.turnTimeout)
	}
	t.Cleanup(func() {
		e.cancel()
		waitStopped(t, e.client)
		e.srv.CloseClientConnections()
		e.srv.Close()
		// (g) No key, in any form, in any log line.
		out := e.logs.String()
		for _, k := range allKeys {
			if strings.Contains(out, k) || strings.Contains(out, k[len(k)-12:]) {
				t.Errorf("an API key appears in the logs:\n%s", out)
			}
		}
		if strings.Contains(strings.ToLower(out), "bearer") {
			t.Errorf("an Authorization value appears in the logs:\n%s", out)
		}
	})
	return e
}

// follow starts following a turn with the upstream's key.
func (e *env) follow(turn string) { e.client.Follow(e.ctx, e.up, turn, "") }

// waitStopped waits for every follower to stop.
func waitStopped(t *testing.T, c *Client) {
	t.Helper()
	done := make(chan struct{})
	go func() { c.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		t.Fatal("followers did not stop")
	}
}

// waitFor polls cond until it holds (a guard against hangs, not a timing
// assertion).
func waitFor[T any](t testing.TB, what string, cond func() (T, bool)) T {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		v, ok := cond()
		if ok {
			return v
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s (last: %v)", what, v)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// metrics gathers the registry: series named name{labels} (the upstream
// label left out), histograms as _count and _sum.
func metrics(t testing.TB, reg *prometheus.Registry) map[string]float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			var ls []string
			for _, lp := range m.GetLabel() {
				if lp.GetName() == "upstream" {
					if lp.GetValue() != upName {
						t.Fatalf("unexpected upstream %q", lp.GetValue())
					}
					continue
				}
				ls = append(ls, fmt.Sprintf("%s=%q", lp.GetName(), lp.GetValue()))
			}
			sort.Strings(ls)
			key := mf.GetName()
			if len(ls) > 0 {
				key += "{" + strings.Join(ls, ",") + "}"
			}
			switch mf.GetType() {
			case dto.MetricType_COUNTER:
				out[key] = m.GetCounter().GetValue()
			case dto.MetricType_GAUGE:
				out[key] = m.GetGauge().GetValue()
			case dto.MetricType_HISTOGRAM:
				name, lbl, _ := strings.Cut(key, "{")
				if lbl != "" {
					lbl = "{" + lbl
				}
				out[name+"_count"+lbl] = float64(m.GetHistogram().GetSampleCount())
				out[name+"_sum"+lbl] = m.GetHistogram().GetSampleSum()
			}
		}
	}
	return out
}

// metric reads one series (0 when absent).
func (e *env) metric(t testing.TB, key string) float64 { return metrics(t, e.reg)[key] }

// waitMetric waits until a series reaches a value.
func (e *env) waitMetric(t testing.TB, key string, want float64) {
	t.Helper()
	waitFor(t, key+" = "+fmt.Sprint(want), func() (float64, bool) {
		v := e.metric(t, key)
		return v, v == want
	})
}

// checkMetrics compares series exactly.
func checkMetrics(t testing.TB, got map[string]float64, want map[string]float64) {
	t.Helper()
	keys := make([]string, 0, len(want))
	for k := range want {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		g, ok := got[k]
		if !ok {
			t.Errorf("%s: missing, want %v", k, want[k])
			continue
		}
		if d := g - want[k]; d > 1e-9 || d < -1e-9 {
			t.Errorf("%s = %v, want %v", k, g, want[k])
		}
	}
}

// recordedCounts are the series the recorded stream (testdata/turn.sse)
// gives when counted once: 30 events, one of them (id 20) with bad data.
func recordedCounts(turns float64) map[string]float64 {
	m := map[string]float64{
		`amy_events_total{event="turn.started"}`:     1,
		`amy_events_total{event="phase"}`:            3,
		`amy_events_total{event="routing"}`:          1,
		`amy_events_total{event="rephrase"}`:         1,
		`amy_events_total{event="agent_start"}`:      2,
		`amy_events_total{event="agent_end"}`:        2,
		`amy_events_total{event="validation_start"}`: 3,
		`amy_events_total{event="validation_end"}`:   3,
		`amy_events_total{event="synthesis_delta"}`:  5,
		`amy_events_total{event="synthesis_done"}`:   1,
		`amy_events_total{event="fact_check"}`:       1,
		`amy_events_total{event="memory"}`:           1,
		`amy_events_total{event="cost"}`:             1,
		`amy_events_total{event="cost_warning"}`:     1,
		`amy_events_total{event="turn.completed"}`:   1,
		`amy_events_total{event="turn.failed"}`:      0,
		`amy_events_total{event="unknown"}`:          2,
		`amy_stream_bad_events_total`:                1,

		`amy_turns_started_total`:                                      1,
		`amy_turns_finished_total{outcome="completed"}`:                1,
		`amy_turns_finished_total{outcome="failed"}`:                   0,
		`amy_turns_in_flight`:                                          0,
		`amy_cost_usd_total`:                                           0.1288,
		`amy_turn_cost_usd_count`:                                      1,
		`amy_turn_cost_usd_sum`:                                        0.1288,
		`amy_agent_runs_total{agent="Data Science Agent"}`:             1,
		`amy_agent_runs_total{agent="Domain Expert Agent"}`:            1,
		`amy_agent_cost_usd_total{agent="Data Science Agent"}`:         0.0895,
		`amy_agent_cost_usd_total{agent="Domain Expert Agent"}`:        0.0341,
		`amy_agent_duration_seconds_sum{agent="Data Science Agent"}`:   64.2,
		`amy_agent_duration_seconds_sum{agent="Domain Expert Agent"}`:  63.1,
		`amy_routing_decisions_total{main_agent="Data Science Agent"}`: 1,
		`amy_validations_total{verdict="validated"}`:                   1,
		`amy_validations_total{verdict="conditional"}`:                 1,
		`amy_validations_total{verdict="rejected"}`:                    1,
		`amy_validation_gates_total{result="passed"}`:                  9,
		`amy_validation_gates_total{result="failed"}`:                  5,
		`amy_fact_check_issues_total`:                                  2,
		`amy_memory_entries_total`:                                     3,
		`amy_cost_warnings_total`:                                      1,
		`amy_turn_duration_seconds_count{outcome="completed"}`:         1,
		// 09:14:07.120 → 09:17:49.480, from the events' own `at`.
		`amy_turn_duration_seconds_sum{outcome="completed"}`: 222.36,
		`amy_turn_duration_seconds_count{outcome="failed"}`:  0,
		`amy_time_to_first_token_seconds_count`:              1,
	}
	for k, v := range m {
		m[k] = v * turns
	}
	return m
}
