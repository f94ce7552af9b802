package app

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/amp-exporter/amp-exporter/collector"
	"github.com/amp-exporter/amp-exporter/parser/streamjson"
	"github.com/amp-exporter/amp-exporter/state"
	"github.com/amp-exporter/amp-exporter/store"
)

// openTestKeeper opens a keeper on dir over empty stores.
func openTestKeeper(t *testing.T, dir string) (*state.Keeper, state.Stores) {
	t.Helper()
	labels := store.NewLabelCap(100, nil)
	stores := state.Stores{
		Threads: store.NewThreadStore(store.StoreOptions{Labels: labels}),
		Streams: store.NewStreamStore(labels, nil),
		Amy:     store.NewAmyStore(labels, nil),
		Labels:  labels,
	}
	k, err := state.Open(state.Options{Dir: dir, Stores: stores, Metrics: collector.NewExporterMetrics(prometheus.NewRegistry()),
		Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = k.Close() })
	return k, stores
}

// An ingest request is answered only once what it counted is on disk: a
// keeper that would not save for an hour saves for it.
func TestIngestIsAnsweredOnceSaved(t *testing.T) {
	dir := t.TempDir()
	k, stores := openTestKeeper(t, dir)
	ctx, cancel := context.WithCancel(context.Background())
	ran := make(chan error, 1)
	go func() { ran <- runStateKeeper(ctx, k, time.Hour, slog.New(slog.DiscardHandler)) }()

	inner := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		stores.Streams.Apply([]streamjson.Increments{{UserMessages: 1, Prompts: 1}})
		w.Header().Set("Content-Type", "text/plain")
		w.WriteHeader(http.StatusAccepted)
		_, _ = io.WriteString(w, "counted")
	})
	srv := httptest.NewServer(durableIngest(inner, k, slog.New(slog.DiscardHandler)))
	defer srv.Close()
	resp, err := http.Post(srv.URL, "application/x-ndjson", strings.NewReader("{}\n"))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusAccepted || string(body) != "counted" || resp.Header.Get("Content-Type") != "text/plain" {
		t.Fatalf("answer changed on the way: %d %q %v", resp.StatusCode, body, resp.Header)
	}
	// What a process started now (after a kill) would read: the log as it
	// is on disk (copied, as this keeper still holds the directory).
	log, err := os.ReadFile(filepath.Join(dir, state.LogName))
	if err != nil {
		t.Fatal(err)
	}
	copied := t.TempDir()
	if err := os.WriteFile(filepath.Join(copied, state.LogName), log, 0o644); err != nil {
		t.Fatal(err)
	}
	_, restored := openTestKeeper(t, copied)
	got, _ := json.Marshal(restored.Streams.Export().Series)
	want, _ := json.Marshal(stores.Streams.Export().Series)
	if string(got) != string(want) || !strings.Contains(string(got), "prompts") {
		t.Fatalf("saved stream series %s, want %s", got, want)
	}
	cancel()
	if err := <-ran; err != nil {
		t.Fatal(err)
	}
	if err := k.Flush(context.Background()); !errors.Is(err, state.ErrClosed) {
		t.Errorf("Flush after the keeper stopped: %v", err)
	}
}
