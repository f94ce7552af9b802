package store

import (
	"fmt"
	"sort"

	"github.com/amp-exporter/amp-exporter/internal/sat"
	"github.com/amp-exporter/amp-exporter/parser/streamjson"
)

// An `amp -x --stream-json` run is also a thread on the Amp server (its
// session_id is the thread id). With the server source on, the run's
// messages, tokens and tool calls are counted from the server's copy and
// the stream adds executions, outcomes, durations, turns and denials only
// (design: "One thread, one count"). Until the server lists the run, what
// it would count is held per run; once the server has synced twice after
// the run's result line without listing it, the run is the stream's and
// what was held is counted.

// heldRun is what a run's stream lines would add to the shared families.
type heldRun struct {
	c      contribution
	result bool // the run's result line was seen
	syncs  int  // complete server syncs since the result line
}

type streamAmpServer struct {
	owners *Owners // nil while the server source is off
	held   map[string]*heldRun
	owned  map[string]bool // runs counted from the stream
}

// ampServerSyncsToWait is how many complete syncs after a run's result line
// the server has to list the run before the stream counts it.
const ampServerSyncsToWait = 2

// EnableAmpServerDedupe turns the rule on; call it before Import and before
// the store is used.
func (s *StreamStore) EnableAmpServerDedupe(o *Owners) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.ampServer = &streamAmpServer{owners: o, held: map[string]*heldRun{}, owned: map[string]bool{}}
}

// dedupeOn reports whether the server source is on (the rule applies).
func (s *StreamStore) dedupeOn() bool { return s.ampServer != nil && s.ampServer.owners != nil }

// ownedOff records, while the server source is off, that run id is
// counted from its stream: the choice is persisted, so that turning the
// source on does not count the run again from the server.
func (s *StreamStore) ownedOff(id string) {
	if s.ampServer == nil {
		s.ampServer = &streamAmpServer{held: map[string]*heldRun{}, owned: map[string]bool{}}
	}
	if !s.ampServer.owned[id] {
		s.ampServer.owned[id] = true
		s.generation++
	}
}

// sharedAdder returns where the shared families of inc go: total, a
// run's held contribution, or nowhere (the server or a local file counts
// the thread).
func (s *StreamStore) sharedAdder(inc streamjson.Increments, total func(Family, string, string, int64)) func(Family, string, string, int64) {
	if inc.SessionID == "" {
		return total
	}
	if !s.dedupeOn() {
		s.ownedOff(inc.SessionID)
		return total
	}
	srv := s.ampServer
	id := inc.SessionID
	switch srv.owners.Owner(id) {
	case SourceStream:
		return total
	case "":
	default:
		delete(srv.held, id)
		return func(Family, string, string, int64) {}
	}
	h := srv.held[id]
	if h == nil {
		h = &heldRun{c: contribution{}}
		srv.held[id] = h
	}
	// Syncs count from the run's first result line: a session that keeps
	// producing runs is not held back for ever.
	if inc.Result {
		h.result = true
	}
	return func(f Family, l1, l2 string, v int64) {
		if v > 0 {
			k := SeriesKey{Fam: f, L1: l1, L2: l2}
			h.c[k] = sat.Add(h.c[k], v)
		}
	}
}

// AmpServerSynced is called after every complete sync of the server source:
// held runs the server now counts are dropped; runs it did not list within
// ampServerSyncsToWait syncs after their result are counted from the stream.
func (s *StreamStore) AmpServerSynced() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.dedupeOn() {
		return
	}
	srv := s.ampServer
	changed := false
	for id, h := range srv.held {
		switch srv.owners.Owner(id) {
		case SourceStream:
			s.flushHeld(id, h)
			changed = true
			continue
		case "":
		default:
			delete(srv.held, id)
			changed = true
			continue
		}
		if !h.result {
			continue
		}
		h.syncs++
		changed = true
		if h.syncs >= ampServerSyncsToWait && srv.owners.Claim(id, SourceStream) {
			s.flushHeld(id, h)
		}
	}
	if changed {
		s.generation++
	}
}

func (s *StreamStore) flushHeld(id string, h *heldRun) {
	for k, v := range h.c {
		s.totals[k] = sat.Add(s.totals[k], v)
	}
	delete(s.ampServer.held, id)
	s.ampServer.owned[id] = true
	s.lastChange = s.now()
}

// StreamOwned lists the runs counted from the stream, for Owners.Seed.
func (s *StreamStore) StreamOwned() []string {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.ampServer == nil {
		return nil
	}
	out := make([]string, 0, len(s.ampServer.owned))
	for id := range s.ampServer.owned {
		out = append(out, id)
	}
	sort.Strings(out)
	return out
}

// HeldRuns is how many runs wait for the server.
func (s *StreamStore) HeldRuns() int {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.ampServer == nil {
		return 0
	}
	return len(s.ampServer.held)
}

// StreamAmpServerState is the persisted form of the rule's state.
type StreamAmpServerState struct {
	Held  map[string]HeldRunState `json:"held,omitempty"`
	Owned []string                `json:"owned,omitempty"`
}

// HeldRunState is one held run.
type HeldRunState struct {
	Result bool          `json:"result,omitempty"`
	Syncs  int           `json:"syncs,omitempty"`
	Series []SeriesValue `json:"series"`
}

func (s *StreamStore) exportAmpServer() *StreamAmpServerState {
	if s.ampServer == nil || (len(s.ampServer.held) == 0 && len(s.ampServer.owned) == 0) {
		return nil
	}
	st := &StreamAmpServerState{Held: map[string]HeldRunState{}}
	for id, h := range s.ampServer.held {
		st.Held[id] = HeldRunState{Result: h.result, Syncs: h.syncs, Series: h.c.series()}
	}
	for id := range s.ampServer.owned {
		st.Owned = append(st.Owned, id)
	}
	sort.Strings(st.Owned)
	return st
}

func checkAmpServerState(st *StreamAmpServerState) error {
	if st == nil {
		return nil
	}
	for id, h := range st.Held {
		if err := checkSeries(h.Series, streamFamilies); err != nil {
			return fmt.Errorf("held run %q: %w", id, err)
		}
	}
	return nil
}

// importAmpServer restores the rule's state; with the server source off,
// runs still held are counted from the stream at once, and are the
// stream's from then on.
func (s *StreamStore) importAmpServer(st *StreamAmpServerState) {
	if st == nil {
		return
	}
	for id, hs := range st.Held {
		h := &heldRun{c: contributionOf(hs.Series), result: hs.Result, syncs: hs.Syncs}
		if !s.dedupeOn() {
			for k, v := range h.c {
				s.totals[k] = sat.Add(s.totals[k], v)
			}
			s.ownedOff(id)
			continue
		}
		s.ampServer.held[id] = h
	}
	for _, id := range st.Owned {
		if s.dedupeOn() {
			s.ampServer.owned[id] = true
		} else {
			s.ownedOff(id)
		}
	}
}
