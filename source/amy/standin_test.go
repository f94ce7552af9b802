package amy

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"os"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/amp-exporter/amp-exporter/internal/clock"
	"github.com/amp-exporter/amp-exporter/parser/sse"
)

// Keys the stand-in knows. None of them may ever appear in a log line.
const (
	goodKey    = "amy-sk-live-7f3c9e2a41d8b6f05c1e"
	clientKey  = "amy-sk-client-0b9d4e7a13f2c58e6d"
	revokedKey = "amy-sk-revoked-5a2e8c1f7d3b9046"
	wrongKey   = "amy-sk-wrong-c4e1a7f9028d3b65"
	// expiredKey is a client token that creates a turn and has expired
	// by the time its stream is read.
	expiredKey = "amy-sk-client-expired-9e3d71c0a5b2"
)

var allKeys = []string{goodKey, clientKey, revokedKey, wrongKey, expiredKey}

// connPlan scripts one connection to a turn's stream.
type connPlan struct {
	Status     int    // answer with this status instead of a stream (0: 200)
	RetryAfter string // Retry-After header of a non-200 answer

	Retry      string // a "retry:" field sent first
	CRLF, CR   bool   // line ends (LF otherwise)
	SplitData  bool   // JSON re-indented and sent as several data lines
	Keepalive  bool   // a ":" comment before every event
	Overlap    int    // on a resume, re-send this many already-seen events
	Delay      time.Duration
	Gzip       bool        // Content-Encoding: gzip
	Header     http.Header // extra response headers
	Silent     bool        // headers, then nothing until the client goes
	StopAfter  int         // close cleanly after the event with this id
	AbortAfter int         // after the event with this id, half an event, then a broken connection

	// Before the first event whose id is above StepsAfter: one ":" comment
	// for every value received on Steps, until Steps is closed.
	Steps      chan struct{}
	StepsAfter int
	// Before the first event whose id is above HoldAfter: wait until
	// Release is closed (or, with Barrier > 0, until Barrier connections to
	// this turn are waiting here, which closes it).
	HoldAfter int
	Release   chan struct{}
	Barrier   int
}

type standInTurn struct {
	events  []sse.Event
	plans   []connPlan // per connection, in order
	def     connPlan   // past the end of plans
	conns   int
	holding int
}

type request struct {
	Method, Path, Turn string
	Auth, LastEventID  string
	Host               string
	Header             http.Header
	At                 time.Time // on the stand-in's clock
	Status             int
	Gone               chan struct{} // closed when the client went away mid-stream
}

// standIn plays the Amy API: GET /v1/turns/{id}/events and POST /v1/turns.
type standIn struct {
	t   testing.TB
	clk clock.Clock

	mu       sync.Mutex
	turns    map[string]*standInTurn
	requests []*request
	active   int // streams being served
	maxAct   int
	newPlans []connPlan // plans of the turn POST /v1/turns creates
	newDef   connPlan
}

var eventsRoute = regexp.MustCompile(`^/v1/turns/([^/]+)/events$`)

// recording is the testdata stream, parsed.
func recording(t testing.TB) []sse.Event {
	raw, err := os.ReadFile("testdata/turn.sse")
	if err != nil {
		t.Fatal(err)
	}
	var evs []sse.Event
	p := sse.NewParser(bytes.NewReader(raw), sse.Options{})
	for {
		ev, err := p.Next()
		if errors.Is(err, io.EOF) {
			return evs
		}
		if err != nil {
			t.Fatal(err)
		}
		evs = append(evs, ev)
	}
}

func newStandIn(t testing.TB, clk clock.Clock) *standIn {
	if clk == nil {
		clk = clock.Real{}
	}
	return &standIn{t: t, clk: clk, turns: map[string]*standInTurn{}}
}

// addTurn makes a turn's stream available: plans for its first
// connections, def for the later ones.
func (s *standIn) addTurn(id string, events []sse.Event, def connPlan, plans ...connPlan) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.turns[id] = &standInTurn{events: events, plans: plans, def: def}
}

// requestsFor returns copies of the requests for a turn's stream.
func (s *standIn) requestsFor(turn string) []request {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []request
	for _, r := range s.requests {
		if r.Turn == turn {
			out = append(out, *r)
		}
	}
	return out
}

func (s *standIn) setStatus(rec *request, code int) {
	s.mu.Lock()
	rec.Status = code
	s.mu.Unlock()
}

func (s *standIn) count(turn string) int { return len(s.requestsFor(turn)) }

func (s *standIn) maxActive() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.maxAct
}

func (s *standIn) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	rec := &request{Method: r.Method, Path: r.URL.Path, Auth: r.Header.Get("Authorization"),
		LastEventID: r.Header.Get("Last-Event-ID"), Host: r.Host, Header: r.Header.Clone(),
		At: s.clk.Now(), Gone: make(chan struct{})}
	if m := eventsRoute.FindStringSubmatch(r.URL.Path); m != nil {
		rec.Turn = m[1]
	}
	s.mu.Lock()
	s.requests = append(s.requests, rec)
	s.mu.Unlock()
	status := func(code int) {
		s.setStatus(rec, code)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(code)
		io.WriteString(w, `{"error":{"message":"`+http.StatusText(code)+`"}}`)
	}

	switch rec.Auth {
	case "Bearer " + goodKey, "Bearer " + clientKey:
	case "Bearer " + expiredKey:
		if r.Method != http.MethodPost {
			status(http.StatusUnauthorized)
			return
		}
	case "Bearer " + revokedKey:
		status(http.StatusForbidden)
		return
	default:
		status(http.StatusUnauthorized)
		return
	}

	if r.Method == http.MethodPost && r.URL.Path == "/v1/turns" {
		io.Copy(io.Discard, r.Body)
		s.mu.Lock()
		s.turns["turn_new"] = &standInTurn{events: recording(s.t), plans: s.newPlans, def: s.newDef}
		s.mu.Unlock()
		s.setStatus(rec, http.StatusCreated)
		body := []byte(`{"id":"turn_new","status":"running"}`)
		w.Header().Set("Content-Type", "application/json")
		// Like most JSON APIs behind a CDN: compressed when accepted.
		if strings.Contains(r.Header.Get("Accept-Encoding"), "gzip") {
			var buf bytes.Buffer
			zw := gzip.NewWriter(&buf)
			zw.Write(body)
			zw.Close()
			body = buf.Bytes()
			w.Header().Set("Content-Encoding", "gzip")
		}
		w.Header().Set("Content-Length", strconv.Itoa(len(body)))
		w.WriteHeader(http.StatusCreated)
		w.Write(body)
		return
	}
	if r.Method != http.MethodGet || rec.Turn == "" {
		status(http.StatusNotFound)
		return
	}
	s.mu.Lock()
	turn := s.turns[rec.Turn]
	var plan connPlan
	if turn != nil {
		plan = turn.def
		if turn.conns < len(turn.plans) {
			plan = turn.plans[turn.conns]
		}
		turn.conns++
	}
	s.mu.Unlock()
	if turn == nil {
		status(http.StatusNotFound)
		return
	}
	if plan.Status != 0 {
		if plan.RetryAfter != "" {
			w.Header().Set("Retry-After", plan.RetryAfter)
		}
		status(plan.Status)
		return
	}
	s.setStatus(rec, http.StatusOK)
	s.mu.Lock()
	s.active++
	s.maxAct = max(s.maxAct, s.active)
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		s.active--
		s.mu.Unlock()
	}()
	s.stream(w, r, rec, turn, plan)
}

// stream serves one connection of a turn's event stream.
func (s *standIn) stream(w http.ResponseWriter, r *http.Request, rec *request, turn *standInTurn, plan connPlan) {
	gone := func() {
		select {
		case <-rec.Gone:
		default:
			close(rec.Gone)
		}
	}
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	for k, v := range plan.Header {
		h[k] = v
	}
	var out io.Writer = w
	var zw *gzip.Writer
	if plan.Gzip {
		h.Set("Content-Encoding", "gzip")
		zw = gzip.NewWriter(w)
		out = zw
	}
	w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(w)
	flush := func() bool {
		if zw != nil {
			zw.Flush()
		}
		if err := rc.Flush(); err != nil {
			gone()
			return false
		}
		return r.Context().Err() == nil
	}
	if !flush() {
		return
	}
	nl := "\n"
	switch {
	case plan.CRLF:
		nl = "\r\n"
	case plan.CR:
		nl = "\r"
	}
	if plan.Silent {
		<-r.Context().Done()
		gone()
		return
	}
	if plan.Retry != "" {
		io.WriteString(out, "retry: "+plan.Retry+nl+nl)
	}

	// Resume after Last-Event-ID, re-sending Overlap events already seen.
	start := 0
	if last, err := strconv.Atoi(rec.LastEventID); err == nil {
		for start < len(turn.events) {
			if id, _ := strconv.Atoi(turn.events[start].ID); id > last {
				break
			}
			start++
		}
		start = max(0, start-plan.Overlap)
	}
	stepped, held := false, false
	for i := start; i < len(turn.events); i++ {
		ev := turn.events[i]
		id, _ := strconv.Atoi(ev.ID)
		if plan.Steps != nil && !stepped && id > plan.StepsAfter {
			stepped = true
			if !flush() {
				return
			}
			for open := true; open; {
				select {
				case _, open = <-plan.Steps:
					if open {
						io.WriteString(out, ": keepalive"+nl)
						if !flush() {
							return
						}
					}
				case <-r.Context().Done():
					gone()
					return
				}
			}
		}
		if plan.Release != nil && !held && id > plan.HoldAfter {
			held = true
			if !flush() {
				return
			}
			s.mu.Lock()
			turn.holding++
			if plan.Barrier > 0 && turn.holding == plan.Barrier {
				close(plan.Release)
			}
			s.mu.Unlock()
			select {
			case <-plan.Release:
			case <-r.Context().Done():
				gone()
				return
			}
		}
		if plan.Delay > 0 && i > start {
			select {
			case <-time.After(plan.Delay):
			case <-r.Context().Done():
				gone()
				return
			}
		}
		io.WriteString(out, renderEvent(ev, plan, nl))
		if !flush() {
			gone()
			return
		}
		if id == plan.StopAfter {
			return
		}
		if id == plan.AbortAfter {
			io.WriteString(out, "id: "+strconv.Itoa(id+1)+nl+"event: phase"+nl+`data: {"agent":`+nl)
			flush()
			panic(http.ErrAbortHandler)
		}
	}
	if zw != nil {
		zw.Close()
	}
	// The server closes the stream after the terminal event.
}

// renderEvent writes one event in a plan's framing.
func renderEvent(ev sse.Event, plan connPlan, nl string) string {
	var b strings.Builder
	if plan.Keepalive {
		b.WriteString(": keepalive" + nl)
	}
	if ev.ID != "" {
		b.WriteString("id: " + ev.ID + nl)
	}
	if ev.Event != "message" {
		b.WriteString("event: " + ev.Event + nl)
	}
	lines := strings.Split(ev.Data, "\n")
	if plan.SplitData {
		var ind bytes.Buffer
		// Re-indenting puts JSON whitespace between tokens; the split
		// falls there, so the joined lines are the same JSON.
		if json.Indent(&ind, []byte(ev.Data), "", "  ") == nil {
			lines = strings.Split(ind.String(), "\n")
		}
	}
	for _, l := range lines {
		b.WriteString("data: " + l + nl)
	}
	b.WriteString(nl)
	return b.String()
}
