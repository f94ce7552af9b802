package store

import (
	"fmt"
	"maps"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/amp-exporter/amp-exporter/internal/sat"
	"github.com/amp-exporter/amp-exporter/parser/amyturn"
)

// Histogram bounds of the Amy source.
var (
	AmyTurnDurationBuckets  = []float64{5, 10, 20, 30, 60, 90, 120, 180, 240, 300, 600, 1200}
	AmyTTFTBuckets          = []float64{1, 2, 5, 10, 20, 30, 60, 120, 180, 300}
	AmyTurnCostBuckets      = []float64{0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5}
	AmyAgentDurationBuckets = []float64{1, 5, 10, 20, 30, 60, 90, 120, 180, 300, 600}
)

// Reconnect reasons and give-up reasons of the Amy client.
const (
	ReconnectEOF          = "eof"
	ReconnectError        = "error"
	ReconnectHTTP5xx      = "http_5xx"
	ReconnectHTTP429      = "http_429"
	ReconnectUnauthorized = "unauthorized"
	ReconnectIdle         = "idle_timeout"
	GivenUpTimeout        = "timeout"
	GivenUpNotFound       = "not_found"
)

// retainFinished is how long a finished turn's state is kept: a reader can
// replay it from the server for an hour after it ended, and must not count
// it again.
const retainFinished = 2 * time.Hour

// Byte budgets of the Amy state (what is kept to deduplicate events; the
// counters themselves are small and fixed): untrusted input is bounded
// before it is stored.
const (
	// DefaultAmyStateBytes bounds the deduplication state of all turns,
	// in memory and in amy-state.json.
	DefaultAmyStateBytes = 16 << 20
	// MaxTurnIDBytes is the longest turn id kept; events of a turn with a
	// longer id are refused.
	MaxTurnIDBytes = 256
)

// Reasons of amy_stream_refused_events_total beyond the parser's.
const RefusedTurnIDTooLong = "turn_id_too_long"

// RefusedReasons are the reasons an event is refused (the series of
// amy_stream_refused_events_total).
var RefusedReasons = []string{amyturn.RefusedIDTooLong, amyturn.RefusedTurnBudget, amyturn.RefusedStateBudget, amyturn.RefusedTooLarge, RefusedTurnIDTooLong}

type amyTurnState struct {
	amyturn.Turn
	Upstream  string    `json:"upstream"`
	LastEvent time.Time `json:"last_event"`
}

type amyUpstream struct {
	totals contribution
	// streams holds the health of each turn's stream being followed
	// (connected, or idle without error).
	streams map[string]bool
	// idleUp is what the last stream to end left behind, for when none
	// is followed: an upstream whose last stream failed is not idle
	// without error.
	idleUp bool
}

// AmyStore holds the Amy source's counters and every followed turn's
// deduplication state, shared by all readers of a turn.
type AmyStore struct {
	mu         sync.RWMutex
	labels     *LabelCap
	upstreams  map[string]*amyUpstream
	turns      map[string]*amyTurnState // upstream + "\x00" + turn id
	generation uint64
	now        func() time.Time

	stateBytes    int // sum of the turns' Bytes
	maxStateBytes int
	// keepUnfinished is how long a turn that has not ended is kept
	// without events: the longest turn_timeout plus the replay window, so
	// that a follower still waiting for it never loses its state.
	keepUnfinished time.Duration
}

// NewAmyStore returns a store; upstreams lists the configured names, whose
// known series start at zero.
func NewAmyStore(labels *LabelCap, now func() time.Time) *AmyStore {
	if now == nil {
		now = time.Now
	}
	return &AmyStore{labels: labels, upstreams: map[string]*amyUpstream{}, turns: map[string]*amyTurnState{}, now: now,
		maxStateBytes: DefaultAmyStateBytes, keepUnfinished: retainFinished}
}

// SetUpstreams declares the configured upstreams (on start and reload).
// Counters of upstreams no longer configured stay until restart.
func (s *AmyStore) SetUpstreams(names []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, n := range names {
		s.upstream(n)
	}
}

func (s *AmyStore) upstream(name string) *amyUpstream {
	u := s.upstreams[name]
	if u == nil {
		u = &amyUpstream{totals: contribution{}, streams: map[string]bool{}, idleUp: true}
		s.upstreams[name] = u
	}
	return u
}

// SetStateBudget sets the byte budget of the deduplication state of all
// turns (DefaultAmyStateBytes when n <= 0).
func (s *AmyStore) SetStateBudget(n int) {
	if n <= 0 {
		n = DefaultAmyStateBytes
	}
	s.mu.Lock()
	s.maxStateBytes = n
	s.mu.Unlock()
}

// SetTurnTimeout tells the store the longest turn_timeout configured: a
// turn that has not ended is kept that long after its last event (plus the
// replay window), so Prune never forgets a turn a follower may still read
// from its start.
func (s *AmyStore) SetTurnTimeout(d time.Duration) {
	s.mu.Lock()
	s.keepUnfinished = max(retainFinished, d+retainFinished)
	s.mu.Unlock()
}

func turnKey(upstream, turn string) string { return upstream + "\x00" + turn }

// ResumeID is the id a new connection to a turn resumes after.
func (s *AmyStore) ResumeID(upstream, turn string) string {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if t := s.turns[turnKey(upstream, turn)]; t != nil {
		return t.ResumeID()
	}
	return ""
}

// Finished reports whether a turn has ended (a follower can stop).
func (s *AmyStore) Finished(upstream, turn string) bool {
	s.mu.RLock()
	defer s.mu.RUnlock()
	t := s.turns[turnKey(upstream, turn)]
	return t != nil && t.Finished
}

// Observe counts one decoded event of a turn. It reports whether the event
// was new (not a replay).
func (s *AmyStore) Observe(upstream, turnID, eventID string, r amyturn.Record, received time.Time) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	u := s.upstream(upstream)
	add := func(f Family, l1, l2 string, v int64) {
		if v > 0 {
			key := SeriesKey{Fam: f, L1: l1, L2: l2}
			u.totals[key] = sat.Add(u.totals[key], v)
		}
	}
	s.generation++
	t, refused := s.turnLocked(upstream, turnID, received)
	if refused != "" {
		add(FamAmyRefused, refused, "", 1)
		return false
	}
	before := t.Bytes()
	o := t.ObserveWithin(eventID, r, received, s.stateBytes < s.maxStateBytes)
	s.stateBytes += t.Bytes() - before
	if o.Duplicate {
		add(FamAmyDuplicates, "", "", 1)
		return false
	}
	if o.Refused != "" {
		add(FamAmyRefused, o.Refused, "", 1)
		return false
	}
	add(FamAmyEvents, r.Name, "", 1)
	if o.Started {
		add(FamAmyStarted, "", "", 1)
	}
	if o.HasTTFT {
		sec := o.TTFT.Seconds()
		add(FamAmyTTFTBucket, "", bucketIndex(AmyTTFTBuckets, sec), 1)
		add(FamAmyTTFTSum, "", "", fixed(FamAmyTTFTSum, sec))
	}
	switch r.Name {
	case amyturn.EventAgentEnd:
		agent := s.labels.value("agent", r.Agent)
		add(FamAmyAgentRuns, agent, "", 1)
		if r.HasDur {
			sec := r.DurationMs / 1000
			add(FamAmyAgentDurBucket, agent, bucketIndex(AmyAgentDurationBuckets, sec), 1)
			add(FamAmyAgentDurSum, agent, "", fixed(FamAmyAgentDurSum, sec))
		}
		if r.HasCost {
			add(FamAmyAgentCost, agent, "", fixed(FamAmyAgentCost, r.CostUSD))
		}
	case amyturn.EventValidationEnd:
		verdict := r.Verdict
		switch verdict {
		case amyturn.VerdictValidated, amyturn.VerdictConditional, amyturn.VerdictRejected:
		default:
			verdict = UnknownValue
		}
		add(FamAmyValidations, verdict, "", 1)
		if r.HasGates && r.GatesTotal >= r.GatesPassed && r.GatesPassed >= 0 {
			add(FamAmyGates, "passed", "", r.GatesPassed)
			add(FamAmyGates, "failed", "", r.GatesTotal-r.GatesPassed)
		}
	case amyturn.EventRouting:
		add(FamAmyRouting, s.labels.value("agent", r.MainAgent), "", 1)
	case amyturn.EventFactCheck:
		add(FamAmyFactIssues, "", "", int64(r.Issues))
	case amyturn.EventMemory:
		add(FamAmyMemory, "", "", int64(r.Entries))
	case amyturn.EventCostWarning:
		add(FamAmyCostWarnings, "", "", 1)
	}
	if o.Outcome != "" {
		add(FamAmyFinished, o.Outcome, "", 1)
		if o.HasDuration {
			sec := o.Duration.Seconds()
			add(FamAmyTurnDurBucket, o.Outcome, bucketIndex(AmyTurnDurationBuckets, sec), 1)
			add(FamAmyTurnDurSum, o.Outcome, "", fixed(FamAmyTurnDurSum, sec))
		}
		if r.Name == amyturn.EventTurnCompleted && r.HasCost {
			add(FamAmyCost, "", "", fixed(FamAmyCost, r.CostUSD))
			add(FamAmyTurnCostBucket, "", bucketIndex(AmyTurnCostBuckets, r.CostUSD), 1)
			add(FamAmyTurnCostSum, "", "", fixed(FamAmyTurnCostSum, r.CostUSD))
		}
	}
	return true
}

// turnLocked returns a turn's state, creating it within the byte budget,
// and notes the activity; or why the turn's events are refused. Callers
// hold the write lock.
func (s *AmyStore) turnLocked(upstream, turnID string, received time.Time) (*amyTurnState, string) {
	if len(turnID) > MaxTurnIDBytes {
		return nil, RefusedTurnIDTooLong
	}
	k := turnKey(upstream, turnID)
	t := s.turns[k]
	if t == nil {
		if s.stateBytes+len(k) >= s.maxStateBytes {
			return nil, amyturn.RefusedStateBudget
		}
		t = &amyTurnState{Upstream: upstream}
		s.turns[k] = t
		s.stateBytes += t.Bytes() + len(k)
	}
	t.LastEvent = received
	return t, ""
}

// BadEvent counts an event of a turn whose data did not decode, once per
// event id: a replay of it counts as a duplicate, like any other event.
func (s *AmyStore) BadEvent(upstream, turnID, eventID string, received time.Time) {
	s.skipped(upstream, turnID, eventID, FamAmyBadEvents, "", received)
}

// TooLarge counts an event over the stream's size limit (refused with
// reason event_too_large), once per event id, and remembers its id so
// that a resume goes on after it instead of failing on it again.
func (s *AmyStore) TooLarge(upstream, turnID, eventID string, received time.Time) {
	s.skipped(upstream, turnID, eventID, FamAmyRefused, amyturn.RefusedTooLarge, received)
}

func (s *AmyStore) skipped(upstream, turnID, eventID string, f Family, l1 string, received time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	u := s.upstream(upstream)
	s.generation++
	t, refused := s.turnLocked(upstream, turnID, received)
	if refused == "" {
		before := t.Bytes()
		var dup bool
		dup, refused = t.Skip(eventID, s.stateBytes < s.maxStateBytes)
		s.stateBytes += t.Bytes() - before
		if dup {
			f, l1 = FamAmyDuplicates, ""
		}
	}
	if refused != "" && f != FamAmyRefused {
		f, l1 = FamAmyRefused, refused
	}
	key := SeriesKey{Fam: f, L1: l1}
	u.totals[key] = sat.Add(u.totals[key], 1)
}

// Reconnected counts a reconnection of a stream.
func (s *AmyStore) Reconnected(upstream, reason string) { s.count(upstream, FamAmyReconnects, reason) }

// GaveUp stops counting a turn as in flight, and counts it given up (also
// a turn of which no event was ever received: a 404 or a timeout on the
// first connection).
func (s *AmyStore) GaveUp(upstream, turnID, reason string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	k := turnKey(upstream, turnID)
	t := s.turns[k]
	if t == nil {
		if len(turnID) > MaxTurnIDBytes || s.stateBytes+len(k) >= s.maxStateBytes {
			return // never stored: nothing to stop counting
		}
		t = &amyTurnState{Upstream: upstream, LastEvent: s.now()}
		s.turns[k] = t
		s.stateBytes += t.Bytes() + len(k)
	}
	if !t.Finished {
		t.Finished = true
		u := s.upstream(upstream)
		key := SeriesKey{Fam: FamAmyGivenUp, L1: reason}
		u.totals[key] = sat.Add(u.totals[key], 1)
		s.generation++
	}
}

func (s *AmyStore) count(upstream string, f Family, l1 string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	u := s.upstream(upstream)
	key := SeriesKey{Fam: f, L1: l1}
	u.totals[key] = sat.Add(u.totals[key], 1)
	s.generation++
}

// SetUp records whether one turn's stream is healthy (connected, or
// idle without error).
func (s *AmyStore) SetUp(upstream, turn string, up bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.upstream(upstream).streams[turn] = up
}

// StreamEnded forgets a turn's stream once it is no longer followed.
func (s *AmyStore) StreamEnded(upstream, turn string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	u := s.upstream(upstream)
	if up, ok := u.streams[turn]; ok {
		u.idleUp = up
		delete(u.streams, turn)
	}
}

// isUp is amy_stream_up: at least one stream healthy, or none followed
// and the last one ended well. One broken stream must not hide the others.
func (u *amyUpstream) isUp() bool {
	if len(u.streams) == 0 {
		return u.idleUp
	}
	for _, ok := range u.streams {
		if ok {
			return true
		}
	}
	return false
}

// Prune forgets finished turns past the replay window, and turns that
// have not ended once they are silent for longer than a follower waits
// (SetTurnTimeout) plus that window: forgetting one earlier would count it
// again when a reader replays it from the start.
func (s *AmyStore) Prune() {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	for k, t := range s.turns {
		keep := retainFinished
		if !t.Finished {
			keep = s.keepUnfinished
		}
		if t.LastEvent.Before(now.Add(-keep)) {
			delete(s.turns, k)
			s.stateBytes -= t.Bytes() + len(k)
			s.generation++
		}
	}
}

// Generation changes whenever the store does.
func (s *AmyStore) Generation() uint64 {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.generation
}

// AmySnapshot is one upstream's part of an AmyStore, copied for a scrape.
type AmySnapshot struct {
	Name     string
	Totals   map[SeriesKey]int64 // fixed point (Unfixed converts)
	InFlight int
	Up       bool
}

// Snapshot copies each upstream's counters for a scrape, by name.
func (s *AmyStore) Snapshot() []AmySnapshot {
	s.mu.RLock()
	defer s.mu.RUnlock()
	inFlight := map[string]int{}
	for _, t := range s.turns {
		if t.Started && !t.Finished {
			inFlight[t.Upstream]++
		}
	}
	out := make([]AmySnapshot, 0, len(s.upstreams))
	for name, u := range s.upstreams {
		out = append(out, AmySnapshot{Name: name, Totals: maps.Clone(u.totals), InFlight: inFlight[name], Up: u.isUp()})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// AmyState is the persisted form of an AmyStore.
type AmyState struct {
	Version   int                      `json:"version"`
	Labels    map[string][]string      `json:"labels"`
	Upstreams map[string][]SeriesValue `json:"upstreams"`
	Turns     map[string]*amyTurnState `json:"turns"`
}

// Export returns the store's state for persistence.
func (s *AmyStore) Export() *AmyState {
	s.mu.RLock()
	defer s.mu.RUnlock()
	st := &AmyState{Version: StateVersion, Labels: s.labels.export(), Upstreams: map[string][]SeriesValue{}, Turns: map[string]*amyTurnState{}}
	for name, u := range s.upstreams {
		series := u.totals.series()
		st.Upstreams[name] = series
	}
	for k, t := range s.turns {
		c := *t
		c.Seen = slices.Clone(t.Seen) // marshalled after the lock is released
		c.Hashes = slices.Clone(t.Hashes)
		st.Turns[k] = &c
	}
	return st
}

// Import loads persisted state into an empty store.
func (s *AmyStore) Import(st *AmyState) error {
	if st.Version != StateVersion {
		return fmt.Errorf("amy state version %d, this exporter reads %d", st.Version, StateVersion)
	}
	for name, series := range st.Upstreams {
		if err := checkSeries(series, amyFamilies); err != nil {
			return fmt.Errorf("upstream %q: %w", name, err)
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.labels.restore(st.Labels)
	for name, series := range st.Upstreams {
		maps.Copy(s.upstream(name).totals, contributionOf(series))
	}
	for k, t := range st.Turns {
		if t == nil {
			continue
		}
		// State of an earlier version may hold more than the budgets
		// allow now: what is over them is dropped, not the counters.
		t.ResumeID() // converts earlier versions' fields
		if len(t.Hashes) > amyturn.MaxStoredHashes {
			t.Hashes = t.Hashes[:amyturn.MaxStoredHashes]
		}
		if s.stateBytes+t.Bytes()+len(k) > s.maxStateBytes {
			continue
		}
		s.turns[k] = t
		s.stateBytes += t.Bytes() + len(k)
	}
	return nil
}
