package app

import (
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

func TestEndpoints(t *testing.T) {
	var ready atomic.Bool
	reloads := make(chan reloadRequest, 1)
	mux := http.NewServeMux()
	err := routes(mux, routeDeps{
		telemetryPath: "/metrics",
		registry:      prometheus.NewRegistry(),
		ready:         &ready,
		reloads:       reloads,
		config:        func() string { return "threads:\n  dirs: [/x]\n" },
		logger:        slog.New(slog.DiscardHandler),
	})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(mux)
	defer srv.Close()
	get := func(method, path string) (int, string) {
		req, _ := http.NewRequest(method, srv.URL+path, nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, _ := get("GET", "/-/ready"); code != http.StatusServiceUnavailable {
		t.Errorf("ready before the first scan: %d", code)
	}
	ready.Store(true)
	if code, _ := get("GET", "/-/ready"); code != http.StatusOK {
		t.Errorf("ready after the first scan: %d", code)
	}
	if code, _ := get("GET", "/-/healthy"); code != http.StatusOK {
		t.Errorf("healthy: %d", code)
	}
	if code, _ := get("GET", "/-/reload"); code != http.StatusMethodNotAllowed {
		t.Errorf("GET /-/reload: %d", code)
	}
	go func() {
		req := <-reloads
		req.reply <- io.ErrUnexpectedEOF
	}()
	if code, body := get("POST", "/-/reload"); code != http.StatusInternalServerError || !strings.Contains(body, "previous configuration is kept") {
		t.Errorf("failed reload: %d %q", code, body)
	}
	go func() {
		req := <-reloads
		req.reply <- nil
	}()
	if code, _ := get("POST", "/-/reload"); code != http.StatusOK {
		t.Errorf("reload: %d", code)
	}
	if code, body := get("GET", "/config"); code != http.StatusOK || !strings.Contains(body, "dirs: [/x]") {
		t.Errorf("/config: %d %q", code, body)
	}
	if code, body := get("GET", "/"); code != http.StatusOK || !strings.Contains(body, "/metrics") {
		t.Errorf("landing page: %d", code)
	}
	if code, _ := get("GET", "/metrics"); code != http.StatusOK {
		t.Errorf("/metrics: %d", code)
	}
}
