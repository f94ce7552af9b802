package streams

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/amp-exporter/amp-exporter/parser/streamjson"
	"github.com/amp-exporter/amp-exporter/store"
)

// IngestConfig bounds what one request may send.
type IngestConfig struct {
	MaxLineBytes int
	MaxBodyBytes int64
	// MaxConcurrent caps the requests served at once (0: no cap); one
	// more gets 429.
	MaxConcurrent int
	// ReadTimeout ends a request whose body sends nothing for this long
	// (0: the server's own read timeout applies to the whole body).
	ReadTimeout time.Duration
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

	inFlight atomic.Int64
	trusted  func() bool
}

// untrustedStore is a Store that can cap the label values of lines from an
// unauthenticated source apart from the user's own (store.StreamStore).
type untrustedStore interface {
	ApplyUntrusted(incs []streamjson.Increments)
}

// SetTrusted says when requests are authenticated (the web config makes
// every request authenticate): their lines count as the user's own data.
// Otherwise (the default) the label values they bring in are kept within
// the label cap's untrusted quota, so a local process or page cannot fill
// the model cap and push the user's real models into "other".
func (h *IngestHandler) SetTrusted(f func() bool) { h.trusted = f }

// NewIngestHandler returns the handler; cfg is read per request, so a
// reload applies to the next one.
func NewIngestHandler(cfg func() IngestConfig, store Store, metrics Metrics, log *slog.Logger) *IngestHandler {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &IngestHandler{cfg: cfg, store: store, metrics: metrics, log: log}
}

// RefuseWebPage answers 403 and reports true when r comes from a web page.
// Browsers send Origin on every cross-origin and every POST request
// (including the "simple" text/plain ones that need no CORS preflight);
// command-line clients do not. A page in the user's browser must not be able
// to change the exporter's state: not write counters, not reload.
func RefuseWebPage(w http.ResponseWriter, r *http.Request) bool {
	if r.Header.Get("Origin") == "" {
		return false
	}
	http.Error(w, "Requests from web pages (with an Origin header) are not accepted.", http.StatusForbidden)
	return true
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
	if !ndjsonContentType(r.Header.Get("Content-Type")) {
		http.Error(w, "Send the body as Content-Type: application/x-ndjson (or application/json).", http.StatusUnsupportedMediaType)
		return
	}
	if RefuseWebPage(w, r) {
		return
	}
	cfg := h.cfg()
	if n := h.inFlight.Add(1); cfg.MaxConcurrent > 0 && n > int64(cfg.MaxConcurrent) {
		h.inFlight.Add(-1)
		w.Header().Set("Retry-After", "5")
		http.Error(w, fmt.Sprintf("Too many ingest requests at once (streams.ingest.max_concurrent_requests: %d); retry later.", cfg.MaxConcurrent), http.StatusTooManyRequests)
		return
	}
	defer h.inFlight.Add(-1)
	trusted := h.trusted != nil && h.trusted()
	rc := http.NewResponseController(w)
	var src io.Reader = r.Body
	if cfg.ReadTimeout > 0 {
		// A run can last hours: no deadline for the whole body or the
		// answer, but every read must bring bytes within ReadTimeout.
		_ = rc.SetWriteDeadline(time.Time{})
		src = &deadlineReader{r: r.Body, rc: rc, timeout: cfg.ReadTimeout}
	}
	body := http.MaxBytesReader(w, io.NopCloser(src), cfg.MaxBodyBytes)
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
		if us, ok := h.store.(untrustedStore); ok && !trusted {
			us.ApplyUntrusted([]streamjson.Increments{inc})
			return
		}
		h.store.Apply([]streamjson.Increments{inc})
	}
	_, err := scanLines(bufio.NewReaderSize(body, 64<<10), cfg.MaxLineBytes, true, func(line []byte, tooLong bool) {
		res.Lines++
		if tooLong {
			res.TooLong++
			h.metrics.ParseFailed(store.SourceStream, streamjson.ReasonLineTooLong)
			if firstBad == "" {
				firstBad = fmt.Sprintf("line %d is longer than streams.max_line_bytes (%d bytes) and was skipped", res.Lines, cfg.MaxLineBytes)
			}
			return
		}
		m, ok, perr := parser.ParseLine(line)
		if perr != nil {
			res.Invalid++
			h.metrics.ParseFailed(store.SourceStream, streamjson.Reason(perr))
			if firstBad == "" {
				firstBad = fmt.Sprintf("line %d is not a stream-json object (%v) and was skipped", res.Lines, perr)
			}
			return
		}
		if ok {
			res.Counted++
			count(run.ApplyLine(m, line))
		}
	})
	if inc, ok := run.Finish(); ok {
		count(inc)
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
	if cfg.ReadTimeout > 0 {
		_ = rc.SetWriteDeadline(time.Now().Add(cfg.ReadTimeout))
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(res)
}

// ndjsonContentType accepts application/x-ndjson and application/json
// (with parameters). Anything else, text/plain above all, is what a web
// page can send cross-origin without asking first.
func ndjsonContentType(ct string) bool {
	mt, _, err := mime.ParseMediaType(ct)
	if err != nil {
		return false
	}
	switch mt {
	case "application/x-ndjson", "application/json", "application/jsonl", "application/jsonlines":
		return true
	}
	return false
}

// deadlineReader moves the connection's read deadline before every read.
type deadlineReader struct {
	r       io.Reader
	rc      *http.ResponseController
	timeout time.Duration
}

func (d *deadlineReader) Read(p []byte) (int, error) {
	_ = d.rc.SetReadDeadline(time.Now().Add(d.timeout))
	return d.r.Read(p)
}
