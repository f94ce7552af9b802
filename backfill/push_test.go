package backfill

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/amp-exporter/amp-exporter/store"
)

func pushSeries() []Series {
	k := store.SeriesKey{Fam: store.FamTokens, L1: "m", L2: "input"}
	return []Series{
		{ID: SeriesID{store.SourceThreads, k}, Times: []int64{1000, 2000, 3000}, growth: []Point{{1000, 1}, {2000, 1}, {3000, 1}}},
		{ID: SeriesID{store.SourceAmpServer, k}, Times: []int64{2000, 3000}, growth: []Point{{2000, 5}, {3000, 1}}},
	}
}

// TestPushRefusedOld: a receiver that refuses old samples gets one clear
// error naming the setting it needs, at once (not after retries).
func TestPushRefusedOld(t *testing.T) {
	for _, msg := range []string{
		"out of bounds",
		"too old sample",
		`err: out of order sample. timestamp=2026-03-02T00:05:00Z, series={__name__="amp_tokens_total"}`,
	} {
		var calls int
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			calls++
			http.Error(w, msg, http.StatusBadRequest)
		}))
		_, err := Push(context.Background(), PushOptions{URL: srv.URL, Client: srv.Client(), MinBackoff: time.Millisecond}, pushSeries(), nil)
		srv.Close()
		if !errors.Is(err, ErrOldSamplesRefused) || !strings.Contains(err.Error(), "out_of_order_time_window") {
			t.Errorf("%q: err = %v, want ErrOldSamplesRefused naming out_of_order_time_window", msg, err)
		}
		if calls != 1 {
			t.Errorf("%q: %d requests, want 1", msg, calls)
		}
	}
}

// TestPushInTimeOrder: one request per sample time, in order, each with
// the samples of that time; a 503 is retried.
func TestPushInTimeOrder(t *testing.T) {
	var mu sync.Mutex
	var sizes []int
	fail := 1
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		if r.Header.Get("Content-Encoding") != "snappy" || r.Header.Get("X-Prometheus-Remote-Write-Version") != "0.1.0" {
			http.Error(w, "bad headers", http.StatusBadRequest)
			return
		}
		if fail > 0 {
			fail--
			http.Error(w, "busy", http.StatusServiceUnavailable)
			return
		}
		sizes = append(sizes, int(r.ContentLength))
		w.WriteHeader(http.StatusNoContent)
	}))
	defer srv.Close()
	n, err := Push(context.Background(), PushOptions{URL: srv.URL, Client: srv.Client(), MinBackoff: time.Millisecond}, pushSeries(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if n != 5 {
		t.Errorf("%d samples sent, want 5", n)
	}
	if len(sizes) != 3 {
		t.Fatalf("%d requests accepted, want 3 (one per sample time)", len(sizes))
	}
	if !(sizes[0] < sizes[1]) {
		t.Errorf("request sizes %v: the first time has one series, the second two", sizes)
	}
}
