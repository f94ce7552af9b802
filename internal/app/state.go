package app

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"time"

	"github.com/amp-exporter/amp-exporter/source/streams"
	"github.com/amp-exporter/amp-exporter/state"
)

// StateSaveInterval bounds what a crash can lose: counts made since the
// last save are re-read from the files that still exist on restart, so only
// the contributions of threads deleted in that window (and stream lines
// ingested over HTTP in it) could be lost. A save writes only what changed,
// so it can be frequent.
const StateSaveInterval = time.Second

// runStateKeeper saves what changed every interval, and once more (then
// closes the keeper) when ctx is done.
func runStateKeeper(ctx context.Context, k *state.Keeper, interval time.Duration, log *slog.Logger) error {
	if interval <= 0 {
		interval = StateSaveInterval
	}
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			if err := k.Close(); err != nil {
				log.Error("cannot save state at shutdown", "err", err)
			}
			return nil
		case <-t.C:
			if err := k.Save(); err != nil {
				log.Error("cannot save state", "err", err)
			}
		}
	}
}

// durableIngest answers an ingest request 200 only once what it counted is
// saved, so that a client that got a success never has to send the lines
// again (which would count them twice) and a crash after the answer loses
// nothing. The answer is held back (it is small) until the save is done.
// When the save fails (a full disk, or the keeper already closed), the
// answer is 503 and says so: the lines are counted in memory and are
// saved with the next save that succeeds, so they must not be sent again.
func durableIngest(next http.Handler, k flusher, log *slog.Logger) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec := &heldResponse{header: http.Header{}}
		next.ServeHTTP(rec, r)
		if rec.status == 0 {
			rec.status = http.StatusOK
		}
		if rec.status < 300 {
			if err := k.Flush(r.Context()); err != nil {
				log.Error("ingested lines are counted but not yet saved", "err", err)
				unsaved(rec, err)
			}
		}
		for name, v := range rec.header {
			w.Header()[name] = v
		}
		w.WriteHeader(rec.status)
		_, _ = w.Write(rec.body.Bytes())
	})
}

// flusher saves what changed and returns once it is on disk (a
// state.Keeper).
type flusher interface {
	Flush(ctx context.Context) error
}

// unsaved turns a held success into 503, keeping the ingest result (what
// was counted) and saying what happened (the error itself, which may name
// the storage path, is only logged).
func unsaved(rec *heldResponse, err error) {
	var res streams.IngestResult
	_ = json.Unmarshal(rec.body.Bytes(), &res) // the handler's own JSON; zero counts otherwise
	msg := "the lines were counted but could not be saved (the exporter's log says why)"
	if errors.Is(err, state.ErrClosed) {
		msg = "the lines were counted, but the exporter is shutting down and its final save has already run"
	}
	res.Error = msg + "; they are saved with the next save that succeeds: do not send them again"
	b, _ := json.Marshal(res)
	rec.status = http.StatusServiceUnavailable
	rec.header.Set("Content-Type", "application/json")
	rec.body.Reset()
	rec.body.Write(b)
	rec.body.WriteByte('\n')
}

// heldResponse keeps a handler's answer until it may be sent.
type heldResponse struct {
	header http.Header
	status int
	body   bytes.Buffer
}

func (h *heldResponse) Header() http.Header { return h.header }

func (h *heldResponse) WriteHeader(status int) {
	if h.status == 0 {
		h.status = status
	}
}

func (h *heldResponse) Write(b []byte) (int, error) {
	if h.status == 0 {
		h.status = http.StatusOK
	}
	return h.body.Write(b)
}
