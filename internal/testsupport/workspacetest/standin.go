// Package workspacetest is a stand-in for Amp's workspace API (the
// Enterprise "External API v2", docs/workspace.md) for tests and
// benchmarks: an httptest server with the client-credentials token
// endpoint, the thread listing, each thread's usage and the daily rollup,
// over a workspace generated from a seed (Config). The stand-in keeps the
// truth: ThreadTotals and Rollup are the exact sums a client must arrive
// at.
//
// Much of the real API is known only second hand, so the JSON is a best
// guess and every open question about it is a switch (Options and the
// Server's setters); docs/workspace.md maps each question to its switch.
// It refuses any method but GET under /api/v2/ (and counts the attempts),
// checks the bearer token and each endpoint's scope, and records every
// request with the bytes it was answered.
package workspacetest

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// The scopes of the API.
const (
	ScopeThreadsMeta     = "amp.api:workspace.threads.meta:view"
	ScopeThreadsContents = "amp.api:workspace.threads.contents:view"
	ScopeThreadsManage   = "amp.api:workspace.threads:manage"
	ScopeAnalytics       = "amp.api:workspace.analytics:view"
	ScopeMembers         = "amp.api:workspace.members:view"
)

// ViewScopes are the four read-only scopes, the application's grant by
// default.
var ViewScopes = []string{ScopeThreadsMeta, ScopeThreadsContents, ScopeAnalytics, ScopeMembers}

// The credentials of the stand-in's application.
const (
	ClientID     = "client_01WSSTANDIN"
	ClientSecret = "wss_secret_" + RemoteSecret
)

// Route names an endpoint, for faults and request counts.
type Route string

// The routes.
const (
	RouteToken   Route = "token"
	RouteThreads Route = "threads"
	RouteUsage   Route = "usage"
	RouteDaily   Route = "daily-usage"
	RouteMembers Route = "members"
	RouteAny     Route = ""
)

// Fault is a canned answer for the next request of a route.
type Fault struct {
	Status int
	// RetryAfter is sent as the Retry-After header when not "" (seconds
	// or an HTTP-date, RetryAfterDate).
	RetryAfter string
}

// RetryAfterDate formats t as Retry-After's HTTP-date form.
func RetryAfterDate(t time.Time) string { return t.UTC().Format(http.TimeFormat) }

// Request is one request served.
type Request struct {
	Method string
	Route  Route // "" when no route matched
	Path   string
	Query  string
	Status int
	Bytes  int64 // of the response body
}

// Server is the stand-in. Its methods are safe for concurrent use with
// the requests it serves.
type Server struct {
	*httptest.Server
	ws *workspace

	mu        sync.Mutex
	opts      Options
	clock     func() time.Time
	rollup    []Usage
	estimates []int64
	grown     map[int]int // main thread index → steps of today's growth
	today     []int       // main threads active today (growth candidates)
	creators  map[int]int // their creators
	// restated: units added to a member's day by Restate.
	restated map[DayUser]int64
	tokens   map[string]token
	seq      int
	granted  []string
	faults   map[Route][]Fault
	requests []Request
	nonGET   int
	bytes    int64
}

// New starts a stand-in of the workspace cfg describes, answering as opts
// say. Building it generates every thread once to sum the rollup
// (2,000 threads take milliseconds; 200,000 under a second); answers are
// generated when asked for.
func New(cfg Config, opts Options) *Server {
	ws := newWorkspace(cfg)
	s := &Server{
		ws: ws, opts: opts.withDefaults(), clock: time.Now,
		grown: map[int]int{}, creators: map[int]int{},
		restated: map[DayUser]int64{}, tokens: map[string]token{},
		granted: slices.Clone(ViewScopes), faults: map[Route][]Fault{},
	}
	s.rollup, s.estimates = ws.buildRollup()
	for i := ws.cfg.Threads - 1; i >= 0; i-- {
		t := ws.thread(i, 0)
		if ws.day(t.last) != ws.today() {
			if ws.day(t.created) < ws.today()-2 {
				break
			}
			continue
		}
		s.today = append(s.today, i)
	}
	if len(s.today) == 0 && ws.cfg.Threads > 0 {
		s.today = []int{ws.cfg.Threads - 1}
	}
	for _, i := range s.today {
		s.creators[i] = ws.thread(i, 0).creator
	}
	s.Server = httptest.NewServer(http.HandlerFunc(s.serve))
	return s
}

// TokenURL is the token endpoint's URL (the real one is on another
// host, auth.ampcode.com; the stand-in serves both).
func (s *Server) TokenURL() string { return s.URL + "/oauth2/token" }

// Config is the workspace's configuration with its defaults filled in.
func (s *Server) Config() Config { return s.ws.cfg }

// UserID is member u's Amp user id (creatorUserID).
func (s *Server) UserID(u int) string { return s.ws.userID(u) }

// RollupUserID is member u's user.id in the daily rollup.
func (s *Server) RollupUserID(u int) string { return s.ws.rollupUserID(u) }

// Email is member u's e-mail address.
func (s *Server) Email(u int) string { return email(u) }

// ThreadID is main thread i's id (k == 0) or its k-th sub-thread's.
func (s *Server) ThreadID(i, k int) string { return s.ws.threadID(i, k) }

// Today is today's date (YYYY-MM-DD) in the rollup's zone.
func (s *Server) Today() string { return s.ws.date(s.ws.today()) }

// SetOptions replaces the answers' options.
func (s *Server) SetOptions(o Options) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.opts = o.withDefaults()
}

// Options returns the answers' options.
func (s *Server) Options() Options {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.opts
}

// Update changes the options under the lock: s.Update(func(o *Options)
// { o.NullItems = true }).
func (s *Server) Update(f func(*Options)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	f(&s.opts)
	s.opts = s.opts.withDefaults()
}

// SetClock sets the clock tokens expire by (default time.Now).
func (s *Server) SetClock(now func() time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.clock = now
}

// Grant sets the scopes the application was granted (default
// ViewScopes).
func (s *Server) Grant(scopes ...string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.granted = slices.Clone(scopes)
}

// Fail queues faults for the next requests of a route (RouteAny: the
// next request of any route that has none queued).
func (s *Server) Fail(r Route, f ...Fault) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.faults[r] = append(s.faults[r], f...)
}

// Grow makes today's figures grow by one step: each main thread active
// today gains a little spend on its creator's first model, and its
// updatedAt moves a minute. ThreadTotals and Rollup include it.
func (s *Server) Grow() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.growLocked()
}

func (s *Server) growLocked() {
	for _, i := range s.today {
		s.grown[i]++
	}
}

// TodayThreads are the main threads that grow (their indexes).
func (s *Server) TodayThreads() []int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.today)
}

// Restate changes a closed day of the rollup: units are added to the
// member's first model's usage and to metrics.usage that day (negative
// lowers it). Thread usage does not change. It reports false for today or
// a day outside the rollup.
func (s *Server) Restate(date, rollupUserID string, units int64) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	d, err := time.Parse(time.DateOnly, date)
	if err != nil {
		return false
	}
	n := int(d.Sub(mustDate(s.ws.date(0))) / (24 * time.Hour))
	if n < 0 || n >= s.ws.today() {
		return false
	}
	s.restated[DayUser{date, rollupUserID}] += units
	return true
}

func mustDate(s string) time.Time {
	t, _ := time.Parse(time.DateOnly, s)
	return t
}

// Requests returns the requests served so far.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.requests)
}

// Count is how many requests a route was sent.
func (s *Server) Count(r Route) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, q := range s.requests {
		if q.Route == r {
			n++
		}
	}
	return n
}

// NonGET is how many requests under /api/v2/ had a method other than
// GET (all refused).
func (s *Server) NonGET() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.nonGET
}

// BytesServed is the size of every response body written.
func (s *Server) BytesServed() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.bytes
}

// ResetRequests forgets the requests recorded (not NonGET).
func (s *Server) ResetRequests() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.requests, s.bytes = nil, 0
}

// recorder counts a response's status and bytes.
type recorder struct {
	http.ResponseWriter
	status int
	n      int64
}

func (r *recorder) WriteHeader(code int) {
	if r.status == 0 {
		r.status = code
	}
	r.ResponseWriter.WriteHeader(code)
}

func (r *recorder) Write(b []byte) (int, error) {
	if r.status == 0 {
		r.status = http.StatusOK
	}
	n, err := r.ResponseWriter.Write(b)
	r.n += int64(n)
	return n, err
}

func route(path string) (Route, string) {
	switch {
	case path == "/oauth2/token":
		return RouteToken, ""
	case path == "/api/v2/threads":
		return RouteThreads, ""
	case path == "/api/v2/workspace/analytics/daily-usage":
		return RouteDaily, ""
	case path == "/api/v2/workspace/members":
		return RouteMembers, ""
	}
	if rest, ok := strings.CutPrefix(path, "/api/v2/threads/"); ok {
		if id, ok := strings.CutSuffix(rest, "/usage"); ok && id != "" && !strings.Contains(id, "/") {
			return RouteUsage, id
		}
	}
	return RouteAny, ""
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	rt, id := route(r.URL.Path)
	rec := &recorder{ResponseWriter: w}
	defer func() {
		s.mu.Lock()
		s.requests = append(s.requests, Request{Method: r.Method, Route: rt, Path: r.URL.Path, Query: r.URL.RawQuery, Status: rec.status, Bytes: rec.n})
		s.bytes += rec.n
		s.mu.Unlock()
	}()
	api := strings.HasPrefix(r.URL.Path, "/api/v2/")
	if api && r.Method != http.MethodGet {
		s.mu.Lock()
		s.nonGET++
		s.mu.Unlock()
		writeError(rec, http.StatusMethodNotAllowed, "method not allowed")
		return
	}
	s.mu.Lock()
	var fault *Fault
	for _, k := range []Route{rt, RouteAny} {
		if q := s.faults[k]; len(q) > 0 {
			fault, s.faults[k] = &q[0], q[1:]
			break
		}
	}
	if api && s.opts.GrowEachRequest {
		s.growLocked()
	}
	if api && s.opts.RateLimitHeaders {
		h := rec.Header()
		h.Set("X-RateLimit-Limit", "600")
		h.Set("X-RateLimit-Remaining", strconv.Itoa(max(0, 600-len(s.requests))))
		h.Set("X-RateLimit-Reset", "60")
	}
	s.mu.Unlock()
	if fault != nil {
		if fault.RetryAfter != "" {
			rec.Header().Set("Retry-After", fault.RetryAfter)
		}
		writeError(rec, fault.Status, "injected failure")
		return
	}
	if rt == RouteToken {
		if r.Method != http.MethodPost {
			writeError(rec, http.StatusMethodNotAllowed, "method not allowed")
			return
		}
		s.token(rec, r)
		return
	}
	if rt == RouteAny || (rt == RouteMembers && !s.Options().Members) {
		writeError(rec, http.StatusNotFound, "not found")
		return
	}
	scopes, ok := s.bearer(r)
	if !ok {
		writeError(rec, http.StatusUnauthorized, "invalid or expired token")
		return
	}
	need := map[Route]string{RouteThreads: ScopeThreadsMeta, RouteUsage: ScopeThreadsMeta, RouteDaily: ScopeAnalytics, RouteMembers: ScopeMembers}[rt]
	if !scopes[need] {
		writeError(rec, http.StatusForbidden, "missing scope "+need)
		return
	}
	switch rt {
	case RouteThreads:
		s.list(rec, r, scopes)
	case RouteUsage:
		s.usage(rec, id)
	case RouteDaily:
		s.daily(rec, r, scopes)
	case RouteMembers:
		s.members(rec, r)
	}
}

// writeError answers the API's error body, {"error": message}.
func writeError(w http.ResponseWriter, status int, msg string) {
	writeJSON(w, status, map[string]any{"error": msg})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		status, b = http.StatusInternalServerError, []byte(`{"error":"stand-in: `+err.Error()+`"}`)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(b)
}
