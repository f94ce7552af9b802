package app

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/amp-exporter/amp-exporter/source/streams"
	"github.com/amp-exporter/amp-exporter/state"
)

type failingFlusher struct{ err error }

func (f failingFlusher) Flush(context.Context) error { return f.err }

// An ingest is answered 200 only once its counts are saved: when the save
// fails (a full disk, the keeper already stopped), the answer is 503, keeps
// what was counted and says not to send the lines again; an answer that was
// not a success is passed on unchanged.
func TestIngestWhoseSaveFailsIsNotAnswered200(t *testing.T) {
	tests := []struct {
		name       string
		inner      int
		flushErr   error
		wantStatus int
		wantError  string
	}{
		{"saved", http.StatusOK, nil, http.StatusOK, ""},
		{"disk full", http.StatusOK, errors.New("write state.log: no space left on device"), http.StatusServiceUnavailable, "could not be saved"},
		{"keeper stopped", http.StatusOK, state.ErrClosed, http.StatusServiceUnavailable, "do not send them again"},
		{"bad lines, not saved either", http.StatusBadRequest, errors.New("disk full"), http.StatusBadRequest, "line 2"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			inner := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				res := streams.IngestResult{Lines: 3, Counted: 2}
				if tc.inner != http.StatusOK {
					res.Error = "line 2 is not a stream-json object"
				}
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(tc.inner)
				_ = json.NewEncoder(w).Encode(res)
			})
			srv := httptest.NewServer(durableIngest(inner, failingFlusher{tc.flushErr}, slog.New(slog.DiscardHandler)))
			defer srv.Close()
			resp, err := http.Post(srv.URL, "application/x-ndjson", strings.NewReader("{}\n"))
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			var res streams.IngestResult
			if err := json.Unmarshal(b, &res); err != nil {
				t.Fatalf("answer %q is not an ingest result: %v", b, err)
			}
			if strings.Contains(string(b), "state.log") {
				t.Errorf("the answer names the state file: %s", b)
			}
			if resp.StatusCode != tc.wantStatus || res.Counted != 2 || !strings.Contains(res.Error, tc.wantError) {
				t.Errorf("answer %d %s, want %d with counted 2 and an error containing %q", resp.StatusCode, b, tc.wantStatus, tc.wantError)
			}
		})
	}
}
