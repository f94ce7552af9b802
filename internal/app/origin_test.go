package app

import (
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

// TestStateChangingRoutesRefuseWebPages is issue 19's cross-origin reload:
// a page in the user's browser POSTs to the exporter on loopback (a "simple"
// request, text/plain, so no CORS preflight). Like ingest, /-/reload refuses
// any request with an Origin header, whatever the peer or the auth.
func TestStateChangingRoutesRefuseWebPages(t *testing.T) {
	var reloads, ingested atomic.Int64
	reloadCh := make(chan reloadRequest)
	go func() {
		for r := range reloadCh {
			reloads.Add(1)
			r.reply <- nil
		}
	}()
	defer close(reloadCh)
	mux := http.NewServeMux()
	var ready atomic.Bool
	if err := routes(mux, routeDeps{telemetryPath: "/metrics", registry: prometheus.NewRegistry(), ready: &ready,
		reloads: reloadCh, config: func() string { return "" }, logger: slog.New(slog.DiscardHandler),
		ingest:        http.HandlerFunc(func(http.ResponseWriter, *http.Request) { ingested.Add(1) }),
		ingestEnabled: func() bool { return true },
		remoteWrites:  func() bool { return true },
	}); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, path, origin, ctype string
		want                      int
	}{
		{"reload from a web page", "/-/reload", "http://evil.example", "text/plain", http.StatusForbidden},
		{"reload from a page on the same host", "/-/reload", "http://127.0.0.1:9101", "text/plain", http.StatusForbidden},
		{"reload from a null origin", "/-/reload", "null", "application/x-www-form-urlencoded", http.StatusForbidden},
		{"reload from curl", "/-/reload", "", "", http.StatusOK},
		{"ingest from a web page", IngestPath, "http://evil.example", "text/plain", http.StatusForbidden},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := reloads.Load()
			req := httptest.NewRequest(http.MethodPost, tc.path, strings.NewReader("x"))
			req.RemoteAddr = "127.0.0.1:40000"
			if tc.origin != "" {
				req.Header.Set("Origin", tc.origin)
			}
			if tc.ctype != "" {
				req.Header.Set("Content-Type", tc.ctype)
			}
			rec := httptest.NewRecorder()
			mux.ServeHTTP(rec, req)
			if rec.Code != tc.want {
				t.Errorf("status %d, want %d (%s)", rec.Code, tc.want, strings.TrimSpace(rec.Body.String()))
			}
			if tc.want == http.StatusForbidden && reloads.Load() != before {
				t.Error("the refused request reloaded the configuration")
			}
		})
	}
	if ingested.Load() != 0 {
		t.Errorf("ingest handler reached %d times from web pages", ingested.Load())
	}
}
