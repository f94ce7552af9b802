package collector

import (
	"fmt"
	"path/filepath"
	"sort"
	"strconv"
	"sync"
	"time"

	"github.com/amp-exporter/amp-exporter/parser/thread"
)

// Source label values.
const (
	SourceThreads = "threads"
	SourceStream  = "stream"
)

// family names a counter (or histogram part) of a thread's contribution.
// The names are persisted in the state file: never rename one.
type family string

const (
	famMessages       family = "messages"        // l1 role
	famPrompts        family = "prompts"         //
	famTokens         family = "tokens"          // l1 model, l2 token type
	famCredits        family = "credits"         // l1 model
	famFinished       family = "finished"        // l1 model, l2 stop reason
	famToolCalls      family = "tool_calls"      // l1 tool, l2 status
	famContextBucket  family = "context_bucket"  // l1 model, l2 bucket index
	famContextSum     family = "context_sum"     // l1 model
	famExchangeBucket family = "exchange_bucket" // l2 bucket index
	famExchangeSum    family = "exchange_sum"    //
)

type seriesKey struct {
	fam    family
	l1, l2 string
}

// contribution is one thread's share of every counter. Histograms are kept
// as per-bucket (not cumulative) counts so that they merge like counters.
type contribution map[seriesKey]float64

// Histogram bounds.
var (
	ContextBuckets  = []float64{0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 0.95, 1}
	ExchangeBuckets = []float64{1, 2, 5, 10, 20, 30, 60, 120, 300, 600, 1200, 1800, 3600, 7200}
)

func bucketIndex(bounds []float64, v float64) string {
	return strconv.Itoa(sort.SearchFloat64s(bounds, v))
}

// FileVersion identifies one version of a file cheaply (from stat), so an
// unchanged file is never parsed twice, across restarts too.
type FileVersion struct {
	Size     int64  `json:"size"`
	ModNanos int64  `json:"mtime_ns"`
	Inode    uint64 `json:"ino"`
	CtimeNs  int64  `json:"ctime_ns"`
}

// FileRecord is what the store knows of a present thread file.
type FileRecord struct {
	Key       string      `json:"key"`
	AgentMode string      `json:"agent_mode"`
	Version   FileVersion `json:"version"`
}

type threadRecord struct {
	contrib      contribution
	lastActivity int64 // epoch ms
}

// ThreadStore holds the threads source's counters: every thread's
// contribution, the totals, and the files present now.
//
// The counting rules live here. A thread's contribution to each series only
// ever grows: a rewrite adds the difference where the new snapshot exceeds
// the remembered one, and adds nothing where it is lower (truncation, edits,
// cancellation cleanup) or equal (an identical rewrite). Contributions are
// kept for threads whose files are gone, so a file that comes back is not
// counted twice.
type ThreadStore struct {
	mu           sync.RWMutex
	labels       *LabelCap
	threads      map[string]*threadRecord
	files        map[string]*FileRecord
	totals       contribution
	lastActivity int64
	lastChange   time.Time
	generation   uint64 // bumped on every change, for the state writer
	now          func() time.Time
}

// StoreOptions configures a ThreadStore.
type StoreOptions struct {
	// Labels is the label cap shared with the other sources; when nil the
	// store makes its own from MaxLabelValues and OnFold.
	Labels         *LabelCap
	MaxLabelValues int
	// OnFold is called once per distinct data value folded into "other",
	// with the label's name.
	OnFold func(label string)
	Now    func() time.Time
}

// NewThreadStore returns an empty store.
func NewThreadStore(opts StoreOptions) *ThreadStore {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.MaxLabelValues <= 0 {
		opts.MaxLabelValues = 100
	}
	if opts.Labels == nil {
		opts.Labels = NewLabelCap(opts.MaxLabelValues, opts.OnFold)
	}
	return &ThreadStore{
		labels:  opts.Labels,
		threads: map[string]*threadRecord{},
		files:   map[string]*FileRecord{},
		totals:  contribution{},
		now:     opts.Now,
	}
}

// File returns the record of a present file.
func (s *ThreadStore) File(path string) (FileRecord, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	r, ok := s.files[path]
	if !ok {
		return FileRecord{}, false
	}
	return *r, true
}

// FilesUnder returns the present files whose directory is dir.
func (s *ThreadStore) FilesUnder(dir string) []string {
	s.mu.RLock()
	defer s.mu.RUnlock()
	var out []string
	for p := range s.files {
		if filepath.Dir(p) == dir {
			out = append(out, p)
		}
	}
	sort.Strings(out)
	return out
}

// threadKey identifies a thread across files: its id, or for a file
// without one, its name.
func threadKey(path string, sum *thread.Summary) string {
	if sum.ID != "" {
		return sum.ID
	}
	return "file:" + filepath.Base(path)
}

// Apply records a successfully parsed snapshot of the file at path and
// reports whether any counter moved.
func (s *ThreadStore) Apply(path string, v FileVersion, sum *thread.Summary) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	key := threadKey(path, sum)
	c := s.contribute(sum)
	rec := s.threads[key]
	if rec == nil {
		rec = &threadRecord{contrib: contribution{}}
		s.threads[key] = rec
	}
	changed := false
	for k, val := range c {
		if old := rec.contrib[k]; val > old {
			s.totals[k] += val - old
			rec.contrib[k] = val
			changed = true
		}
	}
	if sum.LastActivity > rec.lastActivity {
		rec.lastActivity = sum.LastActivity
		s.lastActivity = max(s.lastActivity, sum.LastActivity)
		changed = true
	}
	old, existed := s.files[path]
	agentMode := s.labels.value("agent_mode", sum.AgentMode)
	if !existed || old.Key != key || old.AgentMode != agentMode {
		changed = true
	}
	s.files[path] = &FileRecord{Key: key, AgentMode: agentMode, Version: v}
	if changed {
		s.lastChange = s.now()
	}
	s.generation++
	return changed
}

// Remove forgets that the file at path is present. Its thread's
// contribution stays: tokens spent stay spent.
func (s *ThreadStore) Remove(path string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.files[path]; !ok {
		return
	}
	delete(s.files, path)
	s.lastChange = s.now()
	s.generation++
}

// contribute turns a summary into series, folding data-derived label values.
// Callers hold the write lock (the label cap mutates).
func (s *ThreadStore) contribute(sum *thread.Summary) contribution {
	c := contribution{}
	add := func(f family, l1, l2 string, v float64) {
		if v != 0 {
			c[seriesKey{f, l1, l2}] += v
		}
	}
	model := func(m string) string { return s.labels.value("model", m) }
	add(famMessages, "user", "", float64(sum.UserMessages))
	add(famMessages, "assistant", "", float64(sum.AssistantMessages))
	add(famPrompts, "", "", float64(sum.Prompts))
	for m, t := range sum.Tokens {
		m = model(m)
		add(famTokens, m, "input", float64(t.Input))
		add(famTokens, m, "output", float64(t.Output))
		add(famTokens, m, "cache_read", float64(t.CacheRead))
		add(famTokens, m, "cache_creation", float64(t.CacheCreation))
	}
	for m, v := range sum.Credits {
		add(famCredits, model(m), "", v)
	}
	for m, reasons := range sum.Finished {
		m = model(m)
		for r, n := range reasons {
			add(famFinished, m, s.labels.value("stop_reason", r), float64(n))
		}
	}
	for tool, statuses := range sum.ToolCalls {
		tool = s.labels.value("tool", tool)
		for st, n := range statuses {
			add(famToolCalls, tool, st, float64(n))
		}
	}
	for _, r := range sum.ContextUtil {
		m := model(r.Model)
		add(famContextBucket, m, bucketIndex(ContextBuckets, r.Ratio), 1)
		add(famContextSum, m, "", r.Ratio)
	}
	for _, d := range sum.ExchangeSeconds {
		add(famExchangeBucket, "", bucketIndex(ExchangeBuckets, d), 1)
		add(famExchangeSum, "", "", d)
	}
	return c
}

// ThreadSnapshot is a consistent copy of the store for one scrape.
type ThreadSnapshot struct {
	totals       contribution
	Threads      map[string]int // agent mode → distinct threads present
	LastActivity time.Time      // zero when no thread has a timestamp
	LastChange   time.Time
}

// Snapshot copies what a scrape needs under the read lock.
func (s *ThreadStore) Snapshot() ThreadSnapshot {
	s.mu.RLock()
	defer s.mu.RUnlock()
	snap := ThreadSnapshot{
		totals:     make(contribution, len(s.totals)),
		Threads:    map[string]int{},
		LastChange: s.lastChange,
	}
	for k, v := range s.totals {
		snap.totals[k] = v
	}
	seen := make(map[string]bool, len(s.files))
	for _, f := range s.files {
		if !seen[f.Key] {
			seen[f.Key] = true
			snap.Threads[f.AgentMode]++
		}
	}
	if s.lastActivity > 0 {
		snap.LastActivity = time.UnixMilli(s.lastActivity)
	}
	return snap
}

// Generation changes whenever the store does; the state writer saves only
// when it moved.
func (s *ThreadStore) Generation() uint64 {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.generation
}

// StateVersion is the version of the persisted state's layout.
const StateVersion = 1

// State is the persisted form of a ThreadStore.
type State struct {
	Version      int                    `json:"version"`
	LastActivity int64                  `json:"last_activity_ms"`
	Labels       map[string][]string    `json:"labels"`
	Threads      map[string]ThreadState `json:"threads"`
	Files        map[string]FileRecord  `json:"files"`
}

// ThreadState is one thread's persisted contribution.
type ThreadState struct {
	LastActivity int64         `json:"last_activity_ms,omitempty"`
	Series       []SeriesValue `json:"series"`
}

// SeriesValue is one persisted series of a contribution.
type SeriesValue struct {
	Family string  `json:"f"`
	L1     string  `json:"a,omitempty"`
	L2     string  `json:"b,omitempty"`
	Value  float64 `json:"v"`
}

// Export returns the store's state for persistence.
func (s *ThreadStore) Export() *State {
	s.mu.RLock()
	defer s.mu.RUnlock()
	st := &State{
		Version:      StateVersion,
		LastActivity: s.lastActivity,
		Labels:       map[string][]string{},
		Threads:      make(map[string]ThreadState, len(s.threads)),
		Files:        make(map[string]FileRecord, len(s.files)),
	}
	st.Labels = s.labels.export()
	for key, rec := range s.threads {
		ts := ThreadState{LastActivity: rec.lastActivity, Series: make([]SeriesValue, 0, len(rec.contrib))}
		for k, v := range rec.contrib {
			ts.Series = append(ts.Series, SeriesValue{Family: string(k.fam), L1: k.l1, L2: k.l2, Value: v})
		}
		sort.Slice(ts.Series, func(i, j int) bool {
			a, b := ts.Series[i], ts.Series[j]
			if a.Family != b.Family {
				return a.Family < b.Family
			}
			if a.L1 != b.L1 {
				return a.L1 < b.L1
			}
			return a.L2 < b.L2
		})
		st.Threads[key] = ts
	}
	for p, f := range s.files {
		st.Files[p] = *f
	}
	return st
}

var knownFamilies = map[family]bool{
	famMessages: true, famPrompts: true, famTokens: true, famCredits: true, famFinished: true,
	famToolCalls: true, famContextBucket: true, famContextSum: true, famExchangeBucket: true, famExchangeSum: true,
}

// Import loads persisted state into an empty store. It validates before it
// changes anything, so a damaged state is refused whole.
func (s *ThreadStore) Import(st *State) error {
	if st.Version != StateVersion {
		return fmt.Errorf("state version %d, this exporter reads %d", st.Version, StateVersion)
	}
	for key, ts := range st.Threads {
		for _, sv := range ts.Series {
			if !knownFamilies[family(sv.Family)] {
				return fmt.Errorf("thread %q: unknown series family %q", key, sv.Family)
			}
			if sv.Value < 0 || sv.Value != sv.Value {
				return fmt.Errorf("thread %q: invalid value %v in %q", key, sv.Value, sv.Family)
			}
		}
	}
	for p, f := range st.Files {
		if _, ok := st.Threads[f.Key]; !ok {
			return fmt.Errorf("file %q refers to unknown thread %q", p, f.Key)
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.threads) > 0 || len(s.files) > 0 {
		return fmt.Errorf("state must be loaded into an empty store")
	}
	for label, vals := range st.Labels {
		for _, v := range vals {
			s.labels.admit(label, v)
		}
	}
	for key, ts := range st.Threads {
		rec := &threadRecord{contrib: make(contribution, len(ts.Series)), lastActivity: ts.LastActivity}
		for _, sv := range ts.Series {
			k := seriesKey{family(sv.Family), sv.L1, sv.L2}
			rec.contrib[k] = sv.Value
			s.totals[k] += sv.Value
		}
		s.threads[key] = rec
	}
	for p, f := range st.Files {
		f := f
		s.files[p] = &f
	}
	s.lastActivity = st.LastActivity
	return nil
}
