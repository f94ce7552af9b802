package app

import (
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// TestLandingPageRespectsMaxRequests: the landing page gathers the whole
// registry on every request, as a scrape does, so --web.max-requests bounds
// it too (a flood of GET / must not gather without limit); it has slots of
// its own, so it never locks scrapes out.
func TestLandingPageRespectsMaxRequests(t *testing.T) {
	reg := prometheus.NewRegistry()
	gate := make(chan struct{})
	entered := make(chan struct{})
	var first sync.Once
	reg.MustRegister(blockingCollector{func() {
		blocked := false
		first.Do(func() { blocked = true })
		if blocked {
			close(entered)
			<-gate // only the first gather is held
		}
	}})
	mux := http.NewServeMux()
	var ready atomic.Bool
	if err := routes(mux, routeDeps{telemetryPath: "/metrics", registry: reg, ready: &ready,
		config: func() string { return "" }, logger: slog.New(slog.DiscardHandler), maxRequests: 1}); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(mux)
	defer srv.Close()
	get := func(path string) int {
		resp, err := http.Get(srv.URL + path)
		if err != nil {
			t.Errorf("GET %s: %v", path, err)
			return 0
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode
	}
	held := make(chan int, 1)
	go func() { held <- get("/") }()
	select {
	case <-entered:
	case <-time.After(20 * time.Second):
		t.Fatal("the first landing page request never gathered")
	}
	if c := get("/"); c != http.StatusServiceUnavailable {
		t.Errorf("a second landing page request while one is in flight with --web.max-requests=1: %d, want 503", c)
	}
	if c := get("/metrics"); c != http.StatusOK {
		t.Errorf("a scrape while a landing page request is in flight: %d, want 200", c)
	}
	close(gate)
	if c := <-held; c != http.StatusOK {
		t.Errorf("the held landing page request: %d", c)
	}
	if c := get("/"); c != http.StatusOK {
		t.Errorf("the landing page once its slot is free: %d", c)
	}
}
