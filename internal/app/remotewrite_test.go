package app

import (
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/model"

	"github.com/amp-exporter/amp-exporter/config"
	"github.com/amp-exporter/amp-exporter/internal/testsupport/testutil"
)

type countingReceiver struct {
	srv      *httptest.Server
	requests atomic.Int64
}

func newCountingReceiver(t *testing.T) *countingReceiver {
	r := &countingReceiver{}
	r.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		_, _ = io.Copy(io.Discard, req.Body)
		r.requests.Add(1)
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(r.srv.Close)
	return r
}

func rwConfig(urls ...string) *config.Config {
	cfg := &config.Config{}
	for _, u := range urls {
		cfg.RemoteWrite = append(cfg.RemoteWrite, config.RemoteWriteConfig{
			URL: config.RemoteURL(u), Interval: model.Duration(time.Hour), Timeout: model.Duration(5 * time.Second),
			ExternalLabels: map[string]string{"user": "alice"}, ProtobufMessage: config.RemoteWriteMessageV1,
		})
	}
	return cfg
}

// A reload keeps unchanged senders, stops removed ones with a last push,
// starts new ones, and a bad entry changes nothing; shutdown waits for
// every sender's last push.
func TestRemoteWritersApplyAndShutdown(t *testing.T) {
	a, b := newCountingReceiver(t), newCountingReceiver(t)
	var logs syncWriter
	logger := slog.New(slog.NewTextHandler(&logs, nil))
	reg := prometheus.NewRegistry()
	rw := newRemoteWriters(reg, func() bool { return true }, logger)
	if err := rw.apply(rwConfig(a.srv.URL)); err != nil {
		t.Fatal(err)
	}
	// Interval is an hour: the only pushes are the first and the last.
	testutil.WaitUntil(t, "first push to a", func() bool { return a.requests.Load() == 1 })

	if err := rw.apply(rwConfig(a.srv.URL, b.srv.URL)); err != nil {
		t.Fatal(err)
	}
	testutil.WaitUntil(t, "first push to b", func() bool { return b.requests.Load() == 1 })
	if a.requests.Load() != 1 {
		t.Fatalf("the unchanged sender for a was restarted (%d pushes)", a.requests.Load())
	}

	bad := rwConfig(b.srv.URL)
	bad.RemoteWrite[0].HTTPClientConfig.TLSConfig.CAFile = "/no/such/ca.pem"
	if err := rw.apply(bad); err == nil {
		t.Fatal("a bad entry was applied")
	}

	if err := rw.apply(rwConfig(b.srv.URL)); err != nil {
		t.Fatal(err)
	}
	testutil.WaitUntil(t, "last push to a when removed", func() bool { return a.requests.Load() == 2 })

	rw.stop()
	if a.requests.Load() != 2 || b.requests.Load() != 2 {
		t.Fatalf("pushes a=%d b=%d, want 2 each (first and last)", a.requests.Load(), b.requests.Load())
	}
	if n := strings.Count(logs.String(), "pushing metrics with remote write"); n != 2 {
		t.Fatalf("%d senders started, want 2:\n%s", n, logs.String())
	}
}

type syncWriter struct {
	mu sync.Mutex
	b  strings.Builder
}

func (w *syncWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.Write(p)
}

func (w *syncWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.String()
}
