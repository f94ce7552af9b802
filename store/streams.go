package store

import (
	"fmt"
	"maps"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/amp-exporter/amp-exporter/internal/sat"
	"github.com/amp-exporter/amp-exporter/parser/streamjson"
	"github.com/amp-exporter/amp-exporter/parser/thread"
	"github.com/amp-exporter/amp-exporter/pricing"
)

// Histogram bounds of the stream-json source.
var (
	ExecutionDurationBuckets = []float64{1, 5, 10, 30, 60, 120, 300, 600, 1200, 1800, 3600, 7200}
	ExecutionTurnsBuckets    = []float64{1, 2, 3, 5, 10, 20, 50, 100, 200}
)

// StreamFile is where the tailer is in one stream-json capture: the file's
// identity, the offset of the first byte not yet counted, and the state of
// the run in progress. It is saved with the counters, so a restart resumes
// at the same byte and names the tools of a run begun before it.
type StreamFile struct {
	Inode  uint64 `json:"ino"`
	Offset int64  `json:"offset"`
	// HeadHash is a hash of the file's first HeadLen bytes: a file
	// truncated and written again between two polls keeps its inode and
	// may be longer than before, but rarely starts the same.
	HeadLen  int            `json:"head_len"`
	HeadHash uint64         `json:"head_hash"`
	Run      streamjson.Run `json:"run"`
}

// StreamStore holds the stream-json source's counters. Lines are events: each
// is counted once, when it is read, and never again.
type StreamStore struct {
	mu         sync.RWMutex
	labels     *LabelCap
	totals     contribution
	files      map[string]*StreamFile
	lastChange time.Time
	generation uint64
	now        func() time.Time
	prices     Prices
	// untrusted is set while lines from an unauthenticated network source
	// (ingest) are applied: their label values get the cap's untrusted
	// quota, so they can never take the places of the user's own data.
	untrusted bool
	// server: runs whose thread the Amp server source may count instead
	// (streams_ampserver.go); nil while that source is off.
	ampServer *streamAmpServer
	// runs: how far each run was read (streamruns.go).
	runs map[string]*streamRun
}

// SetPrices changes the prices applied to tokens counted from now on.
func (s *StreamStore) SetPrices(p Prices) {
	s.mu.Lock()
	s.prices = p
	s.mu.Unlock()
}

// NewStreamStore returns an empty store sharing the label cap.
func NewStreamStore(labels *LabelCap, now func() time.Time) *StreamStore {
	if now == nil {
		now = time.Now
	}
	return &StreamStore{labels: labels, totals: contribution{}, files: map[string]*StreamFile{}, now: now}
}

// File returns the tailing state of a capture.
func (s *StreamStore) File(path string) (StreamFile, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	f, ok := s.files[path]
	if !ok {
		return StreamFile{}, false
	}
	c := *f
	// The caller advances the run; the stored map must not change under a
	// concurrent Export.
	c.Run.Pending = maps.Clone(f.Run.Pending)
	if h := f.Run.Held; h != nil {
		held := *h
		held.ToolCalls = slices.Clone(h.ToolCalls)
		held.Executions = slices.Clone(h.Executions)
		held.Denials = slices.Clone(h.Denials)
		c.Run.Held = &held
	}
	return c, true
}

// Files lists the captures being tailed.
func (s *StreamStore) Files() []string {
	s.mu.RLock()
	defer s.mu.RUnlock()
	out := make([]string, 0, len(s.files))
	for p := range s.files {
		out = append(out, p)
	}
	sort.Strings(out)
	return out
}

// Apply counts increments that belong to no file (an ingest request).
func (s *StreamStore) Apply(incs []streamjson.Increments) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.applyLocked(incs)
}

// ApplyUntrusted is Apply for lines from an unauthenticated network source
// (the ingest endpoint without auth): the label values they bring in are
// admitted only within the label cap's untrusted quota.
func (s *StreamStore) ApplyUntrusted(incs []streamjson.Increments) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.untrusted = true
	s.applyLocked(incs)
	s.untrusted = false
}

func (s *StreamStore) label(label, v string) string {
	if s.untrusted {
		return s.labels.valueUntrusted(label, v)
	}
	return s.labels.value(label, v)
}

// ApplyFile counts a file's new lines and moves its state in one step, so
// that the saved offset always matches the saved counters.
func (s *StreamStore) ApplyFile(path string, f StreamFile, incs []streamjson.Increments) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.applyLocked(incs)
	s.files[path] = &f
	s.generation++
}

// ForgetFile drops the state of a capture that is gone.
func (s *StreamStore) ForgetFile(path string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.files[path]; ok {
		delete(s.files, path)
		s.generation++
	}
}

func (s *StreamStore) applyLocked(incs []streamjson.Increments) {
	if len(incs) == 0 {
		return
	}
	total := func(f Family, l1, l2 string, v int64) {
		if v > 0 {
			k := SeriesKey{Fam: f, L1: l1, L2: l2}
			s.totals[k] = sat.Add(s.totals[k], v)
		}
	}
	add := total
	for _, inc := range incs {
		// A run read before counts only what no reading counted yet
		// (streamruns.go).
		inc = s.firstReading(inc)
		// What the Amp server's copy of the run counts instead is held
		// or dropped here (streams_ampserver.go); the rest counts at once.
		add = s.sharedAdder(inc, total)
		add(FamMessages, "user", "", int64(inc.UserMessages))
		add(FamMessages, "assistant", "", int64(inc.AssistantMessages))
		add(FamPrompts, "", "", int64(inc.Prompts))
		model := ""
		if inc.Tokens != nil || inc.AssistantMessages > 0 {
			model = s.label("model", inc.Model)
		}
		if t := inc.Tokens; t != nil {
			units, longUnits, priced := unitPrices(s.prices, inc.Model)
			for i, n := range []int64{t.Input, t.Output, t.CacheRead, t.CacheCreation} {
				add(FamTokens, model, TokenTypes[i], n)
				if priced {
					over := max(n-pricing.LongContextThreshold, 0)
					add(FamCost, model, "", sat.Add(sat.Mul(n-over, units[i]), sat.Mul(over, longUnits[i])))
				} else {
					add(FamUnpriced, model, "", n)
				}
			}
		}
		if inc.AssistantMessages > 0 {
			add(FamFinished, model, s.label("stop_reason", inc.StopReason), int64(inc.AssistantMessages))
		}
		for _, tc := range inc.ToolCalls {
			add(FamToolCalls, s.label("tool", tc.Tool), tc.Status, 1)
		}
		add(FamCommits, "", "", int64(inc.Commits))
		add(FamPullRequests, "", "", int64(inc.PullRequests))
		if inc.Commits > 0 || inc.PullRequests > 0 {
			ship := inc.ShipModel
			if ship == "" {
				ship = thread.UnknownModel
			}
			ship = s.label("model", ship)
			add(FamCommitsByModel, ship, "", int64(inc.Commits))
			add(FamPullRequestsByModel, ship, "", int64(inc.PullRequests))
		}
		add(FamPushes, thread.PushSuccess, "", int64(inc.Pushes))
		add(FamPushes, thread.PushFailure, "", int64(inc.FailedPushes))
		add = total
		for _, ex := range inc.Executions {
			add(FamExecutions, ex.Outcome, "", 1)
			if ex.HasDuration {
				add(FamExecDurationBucket, ex.Outcome, bucketIndex(ExecutionDurationBuckets, ex.Seconds), 1)
				add(FamExecDurationSum, ex.Outcome, "", fixed(FamExecDurationSum, ex.Seconds))
			}
			if ex.HasTurns {
				add(FamExecTurnsBucket, "", bucketIndex(ExecutionTurnsBuckets, ex.Turns), 1)
				add(FamExecTurnsSum, "", "", fixed(FamExecTurnsSum, ex.Turns))
			}
		}
		for _, tool := range inc.Denials {
			add(FamPermissionDenials, s.label("tool", tool), "", 1)
		}
	}
	s.lastChange = s.now()
	s.generation++
}

// StreamSnapshot is a consistent copy for one scrape.
type StreamSnapshot struct {
	totals     contribution
	LastChange time.Time
}

// Totals are the snapshot's series, in fixed point (Unfixed converts).
func (s StreamSnapshot) Totals() map[SeriesKey]int64 { return s.totals }

// Snapshot copies what a scrape needs.
func (s *StreamStore) Snapshot() StreamSnapshot {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return StreamSnapshot{totals: maps.Clone(s.totals), LastChange: s.lastChange}
}

// Generation changes whenever the store does.
func (s *StreamStore) Generation() uint64 {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.generation
}

// StreamState is the persisted form of a StreamStore.
type StreamState struct {
	Version int                   `json:"version"`
	Labels  map[string][]string   `json:"labels"`
	Series  []SeriesValue         `json:"series"`
	Files   map[string]StreamFile `json:"files"`
	// AmpServer: runs held for, or kept from, the Amp server source.
	AmpServer *StreamAmpServerState `json:"server,omitempty"`
	// Runs: how far each run was read, by its key (streamruns.go).
	Runs map[string]StreamRunState `json:"runs,omitempty"`
}

// Export returns the store's state for persistence.
func (s *StreamStore) Export() *StreamState {
	s.mu.RLock()
	defer s.mu.RUnlock()
	st := &StreamState{Version: StateVersion, Labels: s.labels.export(), Files: map[string]StreamFile{}}
	st.Series = s.totals.series()
	for p, f := range s.files {
		st.Files[p] = *f
	}
	st.AmpServer = s.exportAmpServer()
	st.Runs = s.exportRuns()
	return st
}

// Import loads persisted state into an empty store, refusing damaged state
// whole.
func (s *StreamStore) Import(st *StreamState) error {
	if st.Version != StateVersion {
		return fmt.Errorf("stream state version %d, this exporter reads %d", st.Version, StateVersion)
	}
	if err := checkSeries(st.Series, streamFamilies); err != nil {
		return err
	}
	for p, f := range st.Files {
		if f.Offset < 0 {
			return fmt.Errorf("file %q: negative offset", p)
		}
	}
	if err := checkAmpServerState(st.AmpServer); err != nil {
		return err
	}
	if err := checkRuns(st.Runs); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.totals) > 0 || len(s.files) > 0 {
		return fmt.Errorf("state must be loaded into an empty store")
	}
	s.labels.restore(st.Labels)
	for k, v := range contributionOf(st.Series) {
		s.totals[k] = sat.Add(s.totals[k], v)
	}
	for p, f := range st.Files {
		f := f
		s.files[p] = &f
	}
	s.importAmpServer(st.AmpServer)
	s.importRuns(st.Runs)
	return nil
}
