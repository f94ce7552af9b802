package amy

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/common/model"

	"github.com/amp-exporter/amp-exporter/config"
	"github.com/amp-exporter/amp-exporter/internal/clock"
	"github.com/amp-exporter/amp-exporter/internal/testsupport/testutil"
	"github.com/amp-exporter/amp-exporter/parser/amyturn"
	"github.com/amp-exporter/amp-exporter/source"
	"github.com/amp-exporter/amp-exporter/store"
)

func amyConfig(ups ...config.AmyUpstream) *config.Config {
	c := config.Default()
	for i := range ups {
		if ups[i].TurnTimeout == 0 {
			ups[i].TurnTimeout = config.Default().Threads.ResyncInterval // any positive duration
		}
	}
	c.Amy = ups
	return c
}

// A reload changes what a running tap forwards to, adds upstreams, and
// reports a changed proxy listener as needing a restart, naming it.
func TestSourceAppliesUpstreamsAndReportsListeners(t *testing.T) {
	answer := func(body string) *httptest.Server {
		s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, body) }))
		t.Cleanup(s.Close)
		return s
	}
	a, b := answer("A"), answer("B")
	st := store.NewAmyStore(store.NewLabelCap(100, nil), nil)
	src := NewSource(st, SourceOptions{})
	if src.Name() != "amy" {
		t.Errorf("name %q", src.Name())
	}
	prod := config.AmyUpstream{Name: "prod", BaseURL: a.URL, Proxy: config.AmyProxy{ListenAddress: "127.0.0.1:9"}}
	if err := src.Apply(amyConfig(prod)); err != nil {
		t.Fatal(err)
	}
	if src.Proxy("none") != nil {
		t.Error("a tap for an upstream without a proxy")
	}
	tap := httptest.NewServer(src.Proxy("prod"))
	defer tap.Close()
	get := func() string {
		resp, err := http.Get(tap.URL + "/v1/whoami")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return string(body)
	}
	if got := get(); got != "A" {
		t.Fatalf("through the tap: %q, want A", got)
	}

	prod.BaseURL = b.URL
	staging := config.AmyUpstream{Name: "staging", BaseURL: b.URL}
	if err := src.Apply(amyConfig(prod, staging)); err != nil {
		t.Fatalf("a new base_url and a new upstream: %v", err)
	}
	if got := get(); got != "B" {
		t.Errorf("through the tap after the reload: %q, want B", got)
	}
	var names []string
	for _, u := range st.Snapshot() {
		names = append(names, u.Name)
	}
	if strings.Join(names, ",") != "prod,staging" {
		t.Errorf("upstreams after the reload: %v", names)
	}

	moved := prod
	moved.Proxy.ListenAddress = "127.0.0.1:10"
	err := src.Apply(amyConfig(moved, config.AmyUpstream{Name: "staging", BaseURL: b.URL, Proxy: config.AmyProxy{ListenAddress: "127.0.0.1:11"}}))
	var re *source.RestartError
	if !errors.As(err, &re) || strings.Join(re.Keys, " ") != `amy["prod"].proxy amy["staging"].proxy` {
		t.Errorf("moved and added proxies: %v", err)
	}
	if got := get(); got != "B" {
		t.Errorf("the tap stopped forwarding after a change that needs a restart: %q", got)
	}
}

// Configured turns are followed once the source runs (and a turn added by
// a reload at once); when Run's context ends, every follower has stopped
// before Run returns.
func TestSourceFollowsConfiguredTurns(t *testing.T) {
	var t1, t2 atomic.Int32
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/v1/turns/t1/events":
			t1.Add(1)
		case "/v1/turns/t2/events":
			t2.Add(1)
		}
		w.Header().Set("Content-Type", "text/event-stream")
		w.(http.Flusher).Flush()
		<-r.Context().Done() // a turn that never ends
	}))
	defer up.Close()
	st := store.NewAmyStore(store.NewLabelCap(100, nil), nil)
	src := NewSource(st, SourceOptions{})
	prod := config.AmyUpstream{Name: "prod", BaseURL: up.URL, Turns: []string{"t1"}, IdleTimeout: config.Default().Threads.ResyncInterval}
	if err := src.Apply(amyConfig(prod)); err != nil {
		t.Fatal(err)
	}
	time.Sleep(50 * time.Millisecond)
	if t1.Load() != 0 {
		t.Fatal("a turn was followed before Run")
	}
	ctx, cancel := context.WithCancel(context.Background())
	ran := make(chan error, 1)
	go func() { ran <- src.Run(ctx) }()
	testutil.WaitUntil(t, "t1 followed", func() bool { return t1.Load() == 1 })
	prod.Turns = []string{"t1", "t2"}
	if err := src.Apply(amyConfig(prod)); err != nil {
		t.Fatal(err)
	}
	testutil.WaitUntil(t, "t2 followed after the reload", func() bool { return t2.Load() == 1 })
	if t1.Load() != 1 {
		t.Errorf("t1 followed again (%d connections)", t1.Load())
	}
	cancel()
	select {
	case err := <-ran:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return after its context ended")
	}
	src.client.mu.Lock()
	n := len(src.client.following)
	src.client.mu.Unlock()
	if n != 0 {
		t.Errorf("%d followers still running after Run returned", n)
	}
}

// followerClock is the wall clock, counting the followers started (each
// starts its turn_timeout timer first).
type followerClock struct {
	clock.Real
	followers atomic.Int32
}

func (c *followerClock) NewTimer(d time.Duration) clock.Timer {
	c.followers.Add(1)
	return c.Real.NewTimer(d)
}

// A reload that reaches the source after it stopped (one that waited for
// the first scan when the shutdown began) starts no follower: nothing
// would wait for it, and it would change the store after the final save.
func TestSourceFollowsNothingOnceStopped(t *testing.T) {
	st := store.NewAmyStore(store.NewLabelCap(100, nil), nil)
	clk := &followerClock{}
	src := NewSource(st, SourceOptions{Clock: clk})
	up := config.AmyUpstream{Name: "prod", BaseURL: "http://127.0.0.1:1"}
	if err := src.Apply(amyConfig(up)); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	ran := make(chan error, 1)
	go func() { ran <- src.Run(ctx) }()
	cancel()
	if err := <-ran; err != nil {
		t.Fatal(err)
	}
	up.Turns = []string{"T-after-stop"}
	if err := src.Apply(amyConfig(up)); err != nil {
		t.Fatal(err)
	}
	src.client.Wait()
	if n := clk.followers.Load(); n != 0 {
		t.Errorf("%d followers started by an Apply after Run returned, want 0", n)
	}
}

// Apply tells the store the longest turn_timeout: an unfinished turn
// silent for longer than the replay window is kept while a follower may
// still read it from its start (else a reconnect would count it twice).
func TestSourceAppliesTheTurnTimeoutToTheStore(t *testing.T) {
	now := time.Unix(1_750_000_000, 0)
	st := store.NewAmyStore(store.NewLabelCap(100, nil), func() time.Time { return now })
	src := NewSource(st, SourceOptions{})
	short := config.AmyUpstream{Name: "a", BaseURL: "http://127.0.0.1:1", TurnTimeout: model.Duration(time.Minute)}
	long := config.AmyUpstream{Name: "b", BaseURL: "http://127.0.0.1:1", TurnTimeout: model.Duration(6 * time.Hour)}
	if err := src.Apply(amyConfig(short, long)); err != nil {
		t.Fatal(err)
	}
	st.Observe("a", "T-1", "1", amyturn.Record{Name: amyturn.EventPhase}, now) // not finished
	now = now.Add(3 * time.Hour)
	st.Prune()
	if r := st.ResumeID("a", "T-1"); r != "1" {
		t.Errorf("an unfinished turn was dropped within the longest turn_timeout (resume id %q)", r)
	}
}
