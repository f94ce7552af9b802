package streams

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"

	"github.com/amp-exporter/amp-exporter/collector"
	"github.com/amp-exporter/amp-exporter/parser/streamjson"
)

// IngestConfig bounds what one request may send.
type IngestConfig struct {
	MaxLineBytes int
	MaxBodyBytes int64
}

// IngestHandler serves POST /api/v1/ingest/stream-json: an NDJSON body of
// stream-json lines, read as a stream, so a long run can be piped in while
// it happens (`amp -x --stream-json … | amp-exporter ingest`). Each line is
// counted as soon as it arrives. A body is one stream: a run still open
// when it ends is counted as incomplete.
type IngestHandler struct {
	cfg     func() IngestConfig
	store   Store
	metrics Metrics
	log     *slog.Logger
}

// NewIngestHandler returns the handler; cfg is read per request, so a
// reload applies to the next one.
func NewIngestHandler(cfg func() IngestConfig, store Store, metrics Metrics, log *slog.Logger) *IngestHandler {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &IngestHandler{cfg: cfg, store: store, metrics: metrics, log: log}
}

// IngestResult is the JSON answer to an ingest request.
type IngestResult struct {
	Lines          int    `json:"lines"`
	Counted        int    `json:"counted"`
	Invalid        int    `json:"invalid"`
	TooLong        int    `json:"too_long"`
	RunsFinished   int    `json:"runs_finished"`
	RunsIncomplete int    `json:"runs_incomplete"`
	Error          string `json:"error,omitempty"`
}

func (h *IngestHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost && r.Method != http.MethodPut {
		w.Header().Set("Allow", "POST, PUT")
		http.Error(w, "POST an NDJSON body of amp --stream-json lines.", http.StatusMethodNotAllowed)
		return
	}
	cfg := h.cfg()
	body := http.MaxBytesReader(w, r.Body, cfg.MaxBodyBytes)
	parser := streamjson.NewParser()
	var (
		run      streamjson.Run
		res      IngestResult
		firstBad string
	)
	count := func(inc streamjson.Increments) {
		for _, ex := range inc.Executions {
			if ex.Outcome == streamjson.OutcomeIncomplete {
				res.RunsIncomplete++
			} else {
				res.RunsFinished++
			}
		}
		h.store.Apply([]streamjson.Increments{inc})
	}
	_, err := scanLines(bufio.NewReaderSize(body, 64<<10), cfg.MaxLineBytes, true, func(line []byte, tooLong bool) {
		res.Lines++
		if tooLong {
			res.TooLong++
			h.metrics.ParseFailed(collector.SourceStream, streamjson.ReasonLineTooLong)
			if firstBad == "" {
				firstBad = fmt.Sprintf("line %d is longer than streams.max_line_bytes (%d bytes) and was skipped", res.Lines, cfg.MaxLineBytes)
			}
			return
		}
		m, ok, perr := parser.ParseLine(line)
		if perr != nil {
			res.Invalid++
			h.metrics.ParseFailed(collector.SourceStream, streamjson.Reason(perr))
			if firstBad == "" {
				firstBad = fmt.Sprintf("line %d is not a stream-json object (%v) and was skipped", res.Lines, perr)
			}
			return
		}
		if ok {
			res.Counted++
			count(run.Apply(m))
		}
	})
	if ex, open := run.End(); open {
		count(streamjson.Increments{Executions: []streamjson.Execution{ex}})
	}
	status := http.StatusOK
	var tooBig *http.MaxBytesError
	switch {
	case errors.As(err, &tooBig):
		status = http.StatusRequestEntityTooLarge
		res.Error = fmt.Sprintf("body larger than streams.ingest.max_body_bytes (%d bytes); the %d lines before the limit were counted", cfg.MaxBodyBytes, res.Counted)
	case err != nil:
		// The client went away mid-body: what arrived is counted.
		status = http.StatusBadRequest
		res.Error = fmt.Sprintf("reading the body: %v; the %d lines received were counted", err, res.Counted)
	case res.TooLong > 0:
		status = http.StatusRequestEntityTooLarge
		res.Error = firstBad + "; the other lines were counted"
	case res.Invalid > 0:
		status = http.StatusBadRequest
		res.Error = firstBad + "; the other lines were counted"
	}
	if status != http.StatusOK {
		h.log.Warn("stream-json ingest request had problems", "status", status, "lines", res.Lines,
			"counted", res.Counted, "invalid", res.Invalid, "too_long", res.TooLong, "err", res.Error)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(res)
}
