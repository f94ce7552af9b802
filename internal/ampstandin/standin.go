// Package ampstandin is a stand-in for the Amp server's internal API
// (docs/formats/amp-server.md) for tests and benchmarks: an httptest server
// that speaks the {ok, result | error} envelope and the methods the
// exporter calls, over thread documents a test puts in (usually generated
// by internal/threadgen), with the failures a real server has: 429 with
// Retry-After, 500, a thread deleted between list and fetch, a thread that
// changes while it is paged, a wrong key, an oversized response and a slow
// answer. It counts requests per method and bytes served.
package ampstandin

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/amp-exporter/amp-exporter/internal/threadgen"
)

// Thread is one thread held by the stand-in.
type Thread struct {
	ID        string
	V         int64
	Created   int64 // epoch ms
	LastMs    int64 // userLastInteractedAt, epoch ms
	Archived  bool
	AgentMode string
	head      map[string]json.RawMessage // the document without messages
	messages  []json.RawMessage
	// Cost is threadDisplayCostInfo's result for the thread; nil gives
	// {"title": …, "totalCostUSD": null}.
	Cost map[string]any
}

// Fault is a canned failure for the next request(s) of a method.
type Fault struct {
	Status     int    // HTTP status
	Code       string // envelope error code ("" for none)
	RetryAfter string // Retry-After header
}

// Server is the stand-in. Its exported methods are safe for concurrent use
// with the requests it serves.
type Server struct {
	*httptest.Server
	mu      sync.Mutex
	key     string
	email   string
	threads map[string]*Thread
	faults  map[string][]Fault
	// vanish: threads listed but gone when fetched.
	vanish map[string]bool
	// unlisted: threads a paged listing skips though they exist, as when
	// a deletion during the paging moves one across a page boundary;
	// asked for by id (threadIDs) they are listed.
	unlisted map[string]bool
	// bumpWhilePaging: threads that get a new message after their first
	// page is served.
	bumpWhilePaging map[string]bool
	oversize        map[string]bool
	delay           time.Duration
	requests        map[string]int
	fetched         map[string]int // getThreadTail per thread
	bytes           int64
	listCalls       []ListCall
}

// ListCall records the params of one listThreads request.
type ListCall struct {
	Limit, Offset   int
	IncludeArchived bool
	InstallationID  string
	ThreadIDs       int // how many ids a listing by id asked for
}

// New starts a stand-in that accepts key and answers getUserInfo with
// email.
func New(key, email string) *Server {
	s := &Server{
		key: key, email: email,
		threads:         map[string]*Thread{},
		faults:          map[string][]Fault{},
		vanish:          map[string]bool{},
		unlisted:        map[string]bool{},
		bumpWhilePaging: map[string]bool{},
		oversize:        map[string]bool{},
		requests:        map[string]int{},
		fetched:         map[string]int{},
	}
	s.Server = httptest.NewServer(http.HandlerFunc(s.serve))
	return s
}

// Put adds or replaces a thread from a whole thread document (the shape of
// a local thread file). lastMs is its userLastInteractedAt; 0 means its
// creation time.
func (s *Server) Put(doc []byte, lastMs int64) (*Thread, error) {
	var head map[string]json.RawMessage
	if err := json.Unmarshal(doc, &head); err != nil {
		return nil, fmt.Errorf("ampstandin: %w", err)
	}
	var msgs []json.RawMessage
	if raw, ok := head["messages"]; ok {
		if err := json.Unmarshal(raw, &msgs); err != nil {
			return nil, fmt.Errorf("ampstandin: messages: %w", err)
		}
		delete(head, "messages")
	}
	t := &Thread{head: head, messages: msgs}
	_ = json.Unmarshal(head["id"], &t.ID)
	_ = json.Unmarshal(head["v"], &t.V)
	_ = json.Unmarshal(head["created"], &t.Created)
	_ = json.Unmarshal(head["agentMode"], &t.AgentMode)
	if t.ID == "" {
		return nil, fmt.Errorf("ampstandin: document without id")
	}
	t.LastMs = lastMs
	if t.LastMs == 0 {
		t.LastMs = t.Created
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if old := s.threads[t.ID]; old != nil {
		t.V = max(t.V, old.V+1)
		t.Cost = old.Cost
	}
	s.setV(t)
	s.threads[t.ID] = t
	return t, nil
}

func (s *Server) setV(t *Thread) {
	t.head["v"] = json.RawMessage(strconv.FormatInt(t.V, 10))
}

// AppendMessage adds a message to a thread, bumps its `v` and moves its
// last interaction to lastMs.
func (s *Server) AppendMessage(id string, msg []byte, lastMs int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	t := s.threads[id]
	if t == nil {
		return
	}
	s.appendLocked(t, msg, lastMs)
}

func (s *Server) appendLocked(t *Thread, msg []byte, lastMs int64) {
	t.messages = append(t.messages, json.RawMessage(slices.Clone(msg)))
	t.V++
	s.setV(t)
	t.LastMs = max(t.LastMs, lastMs)
}

// Touch bumps a thread's `v` without changing its messages (a title
// edit).
func (s *Server) Touch(id string, lastMs int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if t := s.threads[id]; t != nil {
		t.V++
		s.setV(t)
		t.LastMs = max(t.LastMs, lastMs)
	}
}

// SetCost sets a thread's threadDisplayCostInfo result.
func (s *Server) SetCost(id string, cost map[string]any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if t := s.threads[id]; t != nil {
		t.Cost = cost
	}
}

// SetArchived archives or unarchives a thread.
func (s *Server) SetArchived(id string, archived bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if t := s.threads[id]; t != nil {
		t.Archived = archived
	}
}

// Delete removes a thread.
func (s *Server) Delete(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.threads, id)
}

// Vanish makes a thread still listed but gone when fetched
// (thread-not-found), as when it is deleted between list and fetch.
func (s *Server) Vanish(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.vanish[id] = true
}

// SkipInListing makes a paged listing leave out a thread that still
// exists (a listing by threadIDs still shows it), as when a thread deleted
// while the listing was paged shifts it past a page boundary.
func (s *Server) SkipInListing(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.unlisted[id] = true
}

// BumpWhilePaging makes a thread gain a message (and a new `v`) right
// after its first messages page is served, once.
func (s *Server) BumpWhilePaging(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.bumpWhilePaging[id] = true
}

// Oversize makes every getThreadMessagesPage of a thread answer with a
// body of more than size bytes.
func (s *Server) Oversize(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.oversize[id] = true
}

// Fail queues faults for the next requests of a method ("" for any).
func (s *Server) Fail(method string, f ...Fault) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.faults[method] = append(s.faults[method], f...)
}

// SetDelay makes every answer wait d (a slow server).
func (s *Server) SetDelay(d time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.delay = d
}

// SetKey changes the accepted key.
func (s *Server) SetKey(key string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.key = key
}

// Requests returns the number of requests served per method so far.
func (s *Server) Requests() map[string]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[string]int, len(s.requests))
	for k, v := range s.requests {
		out[k] = v
	}
	return out
}

// Fetched returns how many times each thread's tail was served.
func (s *Server) Fetched() map[string]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[string]int, len(s.fetched))
	for k, v := range s.fetched {
		out[k] = v
	}
	return out
}

// ListCalls returns the listThreads requests served.
func (s *Server) ListCalls() []ListCall {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.listCalls)
}

// BytesServed is the total size of the response bodies written.
func (s *Server) BytesServed() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.bytes
}

// Reset zeroes the request and byte counts.
func (s *Server) Reset() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.requests = map[string]int{}
	s.fetched = map[string]int{}
	s.listCalls = nil
	s.bytes = 0
}

// Document returns a thread's whole document as a local file would hold
// it.
func (s *Server) Document(id string) []byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	t := s.threads[id]
	if t == nil {
		return nil
	}
	head := make(map[string]json.RawMessage, len(t.head)+1)
	for k, v := range t.head {
		head[k] = v
	}
	msgs, _ := json.Marshal(t.messages)
	head["messages"] = msgs
	b, _ := json.Marshal(head)
	return b
}

// IDs lists the threads held, newest first.
func (s *Server) IDs() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for _, t := range s.sortedLocked(true) {
		out = append(out, t.ID)
	}
	return out
}

func (s *Server) sortedLocked(archived bool) []*Thread {
	out := make([]*Thread, 0, len(s.threads))
	for _, t := range s.threads {
		if t.Archived && !archived {
			continue
		}
		out = append(out, t)
	}
	slices.SortFunc(out, func(a, b *Thread) int {
		if a.LastMs != b.LastMs {
			return int(b.LastMs - a.LastMs)
		}
		return strings.Compare(b.ID, a.ID)
	})
	return out
}

type request struct {
	Method string          `json:"method"`
	Params json.RawMessage `json:"params"`
}

type params struct {
	IncludeArchived bool     `json:"includeArchived"`
	InstallationID  string   `json:"installationID"`
	Limit           *int     `json:"limit"`
	Offset          int      `json:"offset"`
	Thread          string   `json:"thread"`
	ThreadID        string   `json:"threadID"`
	ThreadIDs       []string `json:"threadIDs"`
	FromIndex       int      `json:"fromIndex"`
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	method := r.URL.RawQuery
	s.mu.Lock()
	s.requests[method]++
	delay, key := s.delay, s.key
	var fault *Fault
	for _, m := range []string{method, ""} {
		if q := s.faults[m]; len(q) > 0 {
			fault = &q[0]
			s.faults[m] = q[1:]
			break
		}
	}
	s.mu.Unlock()
	// The body is read first, so that a client that gives up is noticed
	// while the answer is delayed.
	reqBody, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	if delay > 0 {
		select {
		case <-time.After(delay):
		case <-r.Context().Done():
			return
		}
	}
	if r.Method != http.MethodPost || r.URL.Path != "/api/internal" {
		s.fail(w, http.StatusNotFound, "not-found", "no such endpoint")
		return
	}
	if r.Header.Get("Authorization") != "Bearer "+key {
		s.fail(w, http.StatusUnauthorized, "auth-required", "Authentication required")
		return
	}
	if fault != nil {
		if fault.RetryAfter != "" {
			w.Header().Set("Retry-After", fault.RetryAfter)
		}
		s.fail(w, fault.Status, fault.Code, "injected failure")
		return
	}
	var req request
	if err := json.Unmarshal(reqBody, &req); err != nil || req.Method != method {
		s.fail(w, http.StatusBadRequest, "invalid-request", "bad body")
		return
	}
	var p params
	if len(req.Params) > 0 {
		if err := json.Unmarshal(req.Params, &p); err != nil {
			s.fail(w, http.StatusBadRequest, "invalid-request", "bad params")
			return
		}
	}
	switch method {
	case "getUserInfo":
		s.ok(w, map[string]any{"id": "user-1", "email": s.email})
	case "listThreads":
		s.list(w, p)
	case "getThreadTail":
		s.tail(w, p)
	case "getThreadMessagesPage":
		s.page(w, p)
	case "threadDisplayCostInfo":
		s.cost(w, p)
	default:
		s.fail(w, http.StatusBadRequest, "unknown-method", "unknown method")
	}
}

func (s *Server) list(w http.ResponseWriter, p params) {
	limit := 200
	if p.Limit != nil {
		limit = *p.Limit
	}
	if limit < 1 || limit > 500 || p.Offset < 0 || len(p.ThreadIDs) > 100 {
		s.fail(w, http.StatusBadRequest, "invalid-request", "limit 1–500, at most 100 threadIDs")
		return
	}
	s.mu.Lock()
	s.listCalls = append(s.listCalls, ListCall{Limit: limit, Offset: p.Offset, IncludeArchived: p.IncludeArchived, InstallationID: p.InstallationID, ThreadIDs: len(p.ThreadIDs)})
	all := s.sortedLocked(p.IncludeArchived)
	if len(p.ThreadIDs) > 0 {
		all = slices.DeleteFunc(all, func(t *Thread) bool { return !slices.Contains(p.ThreadIDs, t.ID) })
	} else {
		all = slices.DeleteFunc(all, func(t *Thread) bool { return s.unlisted[t.ID] })
	}
	var page []map[string]any
	for i := p.Offset; i < len(all) && i < p.Offset+limit; i++ {
		t := all[i]
		page = append(page, map[string]any{
			"id": t.ID, "v": t.V, "created": t.Created, "title": "a thread",
			"userLastInteractedAt": t.LastMs, "archived": t.Archived, "agentMode": t.AgentMode,
			"summaryStats": map[string]any{"messageCount": len(t.messages)},
		})
	}
	s.mu.Unlock()
	if page == nil {
		page = []map[string]any{}
	}
	s.ok(w, map[string]any{"threads": page})
}

func (s *Server) find(id string) (*Thread, bool) {
	t := s.threads[id]
	if t == nil || s.vanish[id] {
		return nil, false
	}
	return t, true
}

func (s *Server) tail(w http.ResponseWriter, p params) {
	s.mu.Lock()
	t, ok := s.find(p.Thread)
	if !ok {
		s.mu.Unlock()
		s.fail(w, http.StatusNotFound, "thread-not-found", "Thread not found")
		return
	}
	s.fetched[p.Thread]++
	limit := 1
	if p.Limit != nil {
		limit = max(1, min(*p.Limit, 500))
	}
	from := max(0, len(t.messages)-limit)
	res := map[string]any{
		"thread":        t.head,
		"messages":      slices.Clone(t.messages[from:]),
		"hasMoreBefore": from > 0,
	}
	body := encode(true, res, nil)
	s.mu.Unlock()
	s.write(w, http.StatusOK, body)
}

func (s *Server) page(w http.ResponseWriter, p params) {
	s.mu.Lock()
	t, ok := s.find(p.Thread)
	if !ok {
		s.mu.Unlock()
		s.fail(w, http.StatusNotFound, "thread-not-found", "Thread not found")
		return
	}
	limit := 200
	if p.Limit != nil {
		limit = *p.Limit
	}
	if limit < 1 || limit > 500 || p.FromIndex < 0 {
		s.mu.Unlock()
		s.fail(w, http.StatusBadRequest, "invalid-request", "limit 1–500")
		return
	}
	from := min(p.FromIndex, len(t.messages))
	to := min(from+limit, len(t.messages))
	var next any
	if to < len(t.messages) {
		next = to
	}
	res := map[string]any{"messages": slices.Clone(t.messages[from:to]), "nextMessageIndex": next}
	body := encode(true, res, nil)
	if s.oversize[t.ID] {
		// A valid envelope padded far past any sane limit.
		body = append(body[:len(body)-1], `,"padding":"`...)
		body = append(body, bytes.Repeat([]byte("x"), 80<<20)...)
		body = append(body, `"}`...)
	}
	if s.bumpWhilePaging[t.ID] && from == 0 {
		delete(s.bumpWhilePaging, t.ID)
		if len(t.messages) > 0 {
			s.appendLocked(t, t.messages[len(t.messages)-1], t.LastMs+1000)
		}
	}
	s.mu.Unlock()
	s.write(w, http.StatusOK, body)
}

func (s *Server) cost(w http.ResponseWriter, p params) {
	s.mu.Lock()
	t, ok := s.find(p.ThreadID)
	var res any = map[string]any{"title": "a thread", "totalCostUSD": nil}
	if ok && t.Cost != nil {
		res = t.Cost
	}
	s.mu.Unlock()
	if !ok {
		s.fail(w, http.StatusNotFound, "thread-not-found", "Thread not found")
		return
	}
	s.ok(w, res)
}

func encode(ok bool, result any, errObj any) []byte {
	env := map[string]any{"ok": ok}
	if ok {
		env["result"] = result
	} else {
		env["error"] = errObj
	}
	b, err := json.Marshal(env)
	if err != nil {
		panic(err)
	}
	return b
}

func (s *Server) ok(w http.ResponseWriter, result any) {
	s.write(w, http.StatusOK, encode(true, result, nil))
}

func (s *Server) fail(w http.ResponseWriter, status int, code, msg string) {
	var errObj map[string]any
	if code != "" {
		errObj = map[string]any{"code": code, "message": msg}
	} else {
		errObj = map[string]any{"message": msg}
	}
	s.write(w, status, encode(false, nil, errObj))
}

func (s *Server) write(w http.ResponseWriter, status int, body []byte) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	n, _ := w.Write(body)
	s.mu.Lock()
	s.bytes += int64(n)
	s.mu.Unlock()
}

// PutGenerated puts threads [from, to) of a generated corpus; thread i's
// last interaction is its creation time plus an hour, so the listing
// order is the corpus order reversed.
func (s *Server) PutGenerated(g *threadgen.Generator, from, to int) error {
	for i := from; i < to; i++ {
		_, doc := g.Thread(i)
		if _, err := s.Put(doc, g.Created(i).Add(time.Hour).UnixMilli()); err != nil {
			return err
		}
	}
	return nil
}
