package store

import (
	"cmp"
	"maps"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"sync"
	"time"

	"github.com/amp-exporter/amp-exporter/internal/sat"
	"github.com/amp-exporter/amp-exporter/parser/agentmode"
	"github.com/amp-exporter/amp-exporter/parser/thread"
)

// Source label values.
const (
	SourceThreads = "threads"
	SourceStream  = "stream"
)

// Token types, the values of amp_tokens_total's token_type label.
var TokenTypes = []string{"input", "output", "cache_read", "cache_creation"}

// SeriesKey names a series: its family, its first and second label, and
// for the families money is summed from (RepositoryFamily) the thread's
// repository ("" for none, and for every other family).
type SeriesKey struct {
	Fam    Family
	L1, L2 string
	Repo   string
}

// contribution is one thread's share of every counter. Histograms are kept
// as per-bucket (not cumulative) counts so that they merge like counters.
type contribution map[SeriesKey]int64

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
	// AmpServerV is the `v` of a thread read from the Amp server (ampserver.go).
	AmpServerV int64 `json:"server_v,omitempty"`
	// AmpServerCount and AmpServerLast are the thread's messageCount and last
	// interaction (epoch ms) as the server listed them when it was read:
	// what tells a change of a thread listed without `v`.
	AmpServerCount int64 `json:"server_count,omitempty"`
	AmpServerLast  int64 `json:"server_last_ms,omitempty"`
	// AmpServerWindow: the thread was last counted from a window (its
	// messages from an index on), so what lies before the window was not
	// read since: the thread is read whole at the next full listing, also
	// after a restart.
	AmpServerWindow bool `json:"server_window,omitempty"`
}

// FileRecord is what the store knows of a present thread file.
type FileRecord struct {
	Key       string      `json:"key"`
	AgentMode string      `json:"agent_mode"`
	Version   FileVersion `json:"version"`
	// tk is the file's amp_threads series (its agent mode and its
	// thread's repository), numbered in the store's table (threadsKey):
	// a scrape adds up tens of thousands of files by a slice index rather
	// than by hashing two strings each. Not persisted.
	tk uint32
}

type threadRecord struct {
	// contrib is replaced by a new slice when it changes, never changed in
	// place once the lock that set it is released, so ExportDelta can
	// hand out a shallow copy of the record and build its persisted form
	// outside the lock. Fields added here must keep that promise.
	contrib      compactContribution
	lastActivity int64 // epoch ms
	// pins are the labels the thread's items were first counted under
	// (pins.go); nil until the thread is first applied, or for a thread
	// restored from a state file that predates them. pinGen counts their
	// changes.
	pins   pinBlob
	pinGen uint64
	// repo is the thread's repository label value, pinned when the thread
	// is first counted (repoSet) and never changed after (repository.go);
	// a record restored from a state file is pinned to the value saved
	// with it ("" for states written before the label).
	repo    string
	repoSet bool
	// ledger is when the thread's money series grew, per bucket
	// (ledger.go): its rows of a series add up to the series' value in
	// contrib.
	ledger threadLedger
	// extra is what few threads have (threadExtra); nil for the others.
	extra *threadExtra
}

// threadExtra is the part of a thread's record that only a truncated
// thread or a server thread has. Behind one pointer, it costs the tens of
// thousands of other threads 8 bytes each instead of 88 (a record is kept
// for every thread ever seen). Like the record's other fields it is
// replaced, never changed in place (setMore): a shallow copy of the
// record shares it.
type threadExtra struct {
	// retired is what items no longer in the file counted (retire); nil
	// until the thread is first truncated.
	retired compactContribution
	// win is the thread's window (window.go): a server thread's messages
	// from a prompt on, and what those before it counted; nil for a file.
	win *windowRec
	// billedAt: for the bill of a thread another source counts (bills.go),
	// how the server listed the thread when the bill was read; nil for a
	// thread's own record.
	billedAt *FileVersion
	// ledgerRetired is, per bucket, what the items that left the thread
	// hold in its ledger (retireLedger), nil until it is first truncated.
	ledgerRetired threadLedger
	// ledgerCoarse are the stretches of ledger whose rows were merged to
	// keep it within its bound (ledgerbound.go), sorted and apart; nil
	// for all but long threads.
	ledgerCoarse []coarseSpan
	// days are a server thread's bills per day (bills_daily.go), sorted
	// and disjoint; replaced, never changed in place.
	days []DayBill
}

// more is the record's extra part, the zero value when it has none.
func (r *threadRecord) more() threadExtra {
	if r.extra == nil {
		return threadExtra{}
	}
	return *r.extra
}

// setMore replaces the record's extra part by a new one holding x, or by
// none when every field of x is nil.
func (r *threadRecord) setMore(x threadExtra) {
	if x.retired == nil && x.win == nil && x.billedAt == nil && x.ledgerRetired == nil && x.ledgerCoarse == nil && x.days == nil {
		r.extra = nil
		return
	}
	r.extra = &x
}

// coarse is the record's coarsened stretches of ledger (ledgerbound.go),
// without copying its extra part.
func (r *threadRecord) coarse() []coarseSpan {
	if r.extra == nil {
		return nil
	}
	return r.extra.ledgerCoarse
}

// setCoarse replaces the record's coarsened stretches of ledger.
func (r *threadRecord) setCoarse(spans []coarseSpan) {
	if len(spans) == 0 && r.coarse() == nil {
		return
	}
	r.change(func(x *threadExtra) { x.ledgerCoarse = spans })
}

// change replaces the record's extra part by a changed copy.
func (r *threadRecord) change(f func(x *threadExtra)) {
	x := r.more()
	f(&x)
	r.setMore(x)
}

// seriesIndex numbers the series a store has seen, so that a thread's
// contribution, kept for every thread ever seen, can be a sorted slice of
// (number, value) pairs: ~16 bytes a series instead of ~60 in a map, and
// nothing for the garbage collector to scan.
type seriesIndex struct {
	ids  map[SeriesKey]uint32
	keys []SeriesKey
}

func (x *seriesIndex) id(k SeriesKey) uint32 {
	if id, ok := x.ids[k]; ok {
		return id
	}
	id := uint32(len(x.keys))
	x.ids[k] = id
	x.keys = append(x.keys, k)
	return id
}

type seriesValue struct {
	id uint32
	v  int64
}

// compactContribution is a contribution as series numbers and values,
// sorted by number.
type compactContribution []seriesValue

func (c compactContribution) find(id uint32) (int, bool) {
	return slices.BinarySearchFunc(c, id, func(e seriesValue, id uint32) int { return cmp.Compare(e.id, id) })
}

// compact numbers c's series and sorts them.
func (x *seriesIndex) compact(c contribution) compactContribution {
	out := make(compactContribution, 0, len(c))
	for k, v := range c {
		out = append(out, seriesValue{x.id(k), v})
	}
	slices.SortFunc(out, func(a, b seriesValue) int { return cmp.Compare(a.id, b.id) })
	return out
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
	repos        *Repositories  // the repository label's configuration; nil: none
	appliedOnce  bool           // StoreOptions.AppliedOnce: no pins are kept
	ledgerOnly   bool           // StoreOptions.LedgerOnly
	ledgerMax    int            // the rows a thread's ledger keeps at most; 0: no bound (StoreOptions.LedgerUnbounded)
	ledgerZone   *time.Location // the days a long thread's ledger is coarsened within (SetLedgerZone)
	threads      map[string]*threadRecord
	tuples       tupleTable // the label tuples items are pinned to (pins.go)
	series       seriesIndex
	files        map[string]*FileRecord // replaced on change, never changed in place
	totals       contribution
	lastActivity int64
	lastChange   time.Time
	generation   uint64 // bumped on every change, for the state writer
	now          func() time.Time
	prices       Prices
	pricesGen    uint64 // bumped by SetPrices
	// claim: one thread, one count; see SetClaim (owners.go).
	claim func(key string) bool
	// changedThreads and changedFiles are what changed since the last
	// ExportDelta, so a save writes only that.
	changedThreads map[string]struct{}
	changedFiles   map[string]struct{}
	exportHook     func() // tests: called between two chunks of ExportDelta
	// tkeys numbers the amp_threads series of the files present
	// (FileRecord.tk), tkIndex finds a series' number.
	tkeys   []ThreadsKey
	tkIndex map[ThreadsKey]uint32
	// ledgerRepairs counts restored threads whose ledger did not add up
	// to their counters (restoreLedger).
	ledgerRepairs int
	// mergeBuf is where merge puts a thread's series together, reused by
	// every Apply under the write lock: the record then gets a copy of
	// exactly their number. Built by appends, the record's own array
	// would keep their growth room, up to as much again, for every thread
	// ever seen.
	mergeBuf compactContribution
}

// SetPrices changes the prices applied to tokens counted from now on;
// dollars already counted stay as they were (a counter never goes down).
func (s *ThreadStore) SetPrices(p Prices) {
	s.mu.Lock()
	s.prices = p
	s.pricesGen++
	s.mu.Unlock()
}

// SetLedgerZone sets the zone whose days a long thread's ledger is
// coarsened within, when it reaches its bound (ledgerbound.go): the days
// the exporter's spend is taken in (ledger.timezone). Rows coarsened
// before stay as they are. The default is UTC.
func (s *ThreadStore) SetLedgerZone(loc *time.Location) {
	s.mu.Lock()
	s.ledgerZone = loc
	s.mu.Unlock()
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
	// Repositories is the repository label's configuration, shared with
	// the other thread stores; nil: no thread has a repository.
	Repositories *Repositories
	// AppliedOnce: every thread is applied once and never again (a
	// report counts each thread file once). The store then keeps no pins:
	// they say how a thread's items were labeled for its later snapshots,
	// and there are none.
	AppliedOnce bool
	// LedgerOnly: the store counts only the families the usage ledger is
	// made of and those its dollars follow (tokens, long-context tokens,
	// credits, dollars, unpriced tokens), as a report needs: tool calls,
	// exchanges, message counts and the other families are left out. The
	// model label's cap still sees the model of every edit that counts
	// lines, as a whole store's does, so that it folds the same values.
	LedgerOnly bool
	// LedgerUnbounded: every thread's ledger keeps each of its quarter
	// hours, however many (a report's store: it is read once, whole, and
	// the entries it hands out are as many), instead of coarsening a long
	// thread's oldest rows beyond maxLedgerRows.
	LedgerUnbounded bool
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
	s := &ThreadStore{
		labels:      opts.Labels,
		repos:       opts.Repositories,
		appliedOnce: opts.AppliedOnce,
		ledgerOnly:  opts.LedgerOnly,
		ledgerMax:   maxLedgerRows,
		threads:     map[string]*threadRecord{},
		series:      seriesIndex{ids: map[SeriesKey]uint32{}},
		files:       map[string]*FileRecord{},
		totals:      contribution{},
		now:         opts.Now,

		changedThreads: map[string]struct{}{},
		changedFiles:   map[string]struct{}{},
	}
	if opts.LedgerUnbounded {
		s.ledgerMax = 0
	}
	return s
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
// reports whether any counter moved. The store counts a summary's items
// (thread.Summarize, or thread.FromItems), never its totals: a summary kept
// past its parser's next parse, whose items are no longer its own, is
// refused whole (a caller's bug) rather than counted by a weaker rule.
func (s *ThreadStore) Apply(path string, v FileVersion, sum *thread.Summary) bool {
	if !sum.ItemsValid() || !s.claimed(threadKey(path, sum)) {
		return false
	}
	changed, _ := s.apply(path, v, sum, nil)
	return changed
}

// apply is Apply, and ApplyWindow when w is not nil.
func (s *ThreadStore) apply(path string, v FileVersion, sum *thread.Summary, w *windowArgs) (bool, error) {
	partial := w != nil && w.at.Start > 0
	// The contribution is worked out before taking the write lock, so that
	// parsing workers and scrapes do not queue behind it.
	s.mu.RLock()
	prices, gen := s.prices, s.pricesGen
	key := threadKey(path, sum)
	var base pinBlob
	var baseGen uint64
	repo, repoSet := "", false
	if rec := s.threads[key]; rec != nil {
		base, baseGen = rec.pins, rec.pinGen
		repo, repoSet = rec.repo, rec.repoSet
	}
	s.mu.RUnlock()
	if !repoSet {
		repo = s.repos.value(s.labels, sum.Repository)
	}
	res := s.contribute(sum, prices, base, partial, true, repo)
	s.labels.FoldedElsewhere("model", sum.FoldedModels)
	s.labels.FoldedElsewhere("tool", sum.FoldedTools)
	s.mu.Lock()
	defer s.mu.Unlock()
	rec := s.threads[key]
	if rec == nil {
		rec = &threadRecord{}
		s.threads[key] = rec
	}
	if s.pricesGen != gen || rec.pinGen != baseGen || rec.repoSet && rec.repo != repo {
		// New prices arrived meanwhile (SetPrices promises them for every
		// token counted once it has returned), or another file of the
		// thread pinned items, or its repository, first.
		if rec.repoSet {
			repo = rec.repo
		}
		res = s.contribute(sum, s.prices, rec.pins, partial, true, repo)
	}
	c, pinned := res.series, res.pins
	// led is what the snapshot gives per series and bucket, with what the
	// window's prefix holds when it is a window (ledger.go).
	led := res.ledger
	var win *windowRec
	if w != nil {
		prefix, err := s.windowBase(rec, sum, w.at)
		if err != nil {
			if len(rec.contrib) == 0 && rec.pins == nil {
				delete(s.threads, key)
			}
			return false, err
		}
		for _, e := range prefix {
			k := s.series.keys[e.id]
			c[k] = sat.Add(c[k], e.v)
		}
		if win := rec.more().win; partial && win != nil {
			led = s.withRows(led, win.prefixLedger)
		}
		win = s.nextWindow(pinned, repo, c, led, sum, w.next)
	}
	// identityMoved: the thread's pins, repository or retired part
	// changed, which a save must write even when no counter moved.
	identityMoved := false
	if !rec.repoSet {
		// The thread's first count pins its repository; a remote that
		// could not be read is counted once, here.
		rec.repo, rec.repoSet = repo, true
		s.repos.unreadable(sum.RepositoryReason)
		identityMoved = true
	}
	if res.vanished {
		// A thread whose messages all changed identity at once, into
		// protocol ids, while the snapshot counts at least what the thread
		// did in every series (an import into the server's thread store
		// that no alias matched) is the same thread under new names: the
		// new items take over by max-merging, nothing is retired. Otherwise
		// the items that left keep what they counted.
		if !res.reidentified || !s.covers(rec, c) {
			s.retire(rec, c, res.fresh)
			s.retireLedger(rec, res.ledger, res.freshLedger)
		}
		identityMoved = true
	}
	for _, e := range rec.more().retired {
		k := s.series.keys[e.id]
		c[k] = sat.Add(c[k], e.v)
	}
	if len(pinned) != len(rec.pins) || len(pinned) > 0 && &pinned[0] != &rec.pins[0] {
		rec.pins = pinned
		rec.pinGen++
		identityMoved = true
	}
	if win != nil || rec.more().win != nil {
		// A whole snapshot without a next window, or a window that
		// cannot be kept, drops the one the thread had.
		rec.change(func(x *threadExtra) { x.win = win })
		identityMoved = true
	}
	changed := s.merge(rec, c, &res, led)
	if sum.LastActivity > rec.lastActivity {
		rec.lastActivity = sum.LastActivity
		s.lastActivity = max(s.lastActivity, sum.LastActivity)
		changed = true
	}
	old, existed := s.files[path]
	// Under the CLI's name for the mode: an old name (smart, rush) is an
	// alias of a current one, and one mode must not show as two.
	agentMode := s.labels.value("agent_mode", agentmode.Canonical(sum.AgentMode))
	if !existed || old.Key != key || old.AgentMode != agentMode {
		changed = true
	}
	s.files[path] = &FileRecord{Key: key, AgentMode: agentMode, Version: v, tk: s.threadsKeyLocked(agentMode, rec.repo)}
	if changed {
		s.lastChange = s.now()
	}
	if changed || identityMoved {
		s.changedThreads[key] = struct{}{}
	}
	s.changedFiles[path] = struct{}{}
	s.generation++
	return changed, nil
}

// merge merges a snapshot c (with its window's prefix and the thread's
// retired part) into the thread's record, both sorted by series number:
// each series keeps the larger value, the totals grow by the difference,
// dollars follow the tokens' growth, and the ledger says in which buckets
// it happened (led: what the snapshot gives per bucket, ledger.go). It
// reports whether a counter moved. Callers hold the write lock.
func (s *ThreadStore) merge(rec *threadRecord, c contribution, res *counted, led map[SeriesKey][]bucketValue) bool {
	changed := false
	grown := make(map[SeriesKey]int64, len(res.rates))
	spread := &ledgerSpread{s: s, rec: rec, now: s.withRows(led, rec.more().ledgerRetired), add: map[ledgerSlot]int64{}, tokens: map[SeriesKey][]bucketValue{},
		nowTokens: res.ledger, costs: res.ledgerCost}
	// Merge the new snapshot into the record, both sorted by series
	// number: each series keeps the larger value, and the totals grow by
	// the difference.
	upd := s.series.compact(c)
	merged := s.mergeBuf[:0]
	rest := rec.contrib
	for _, e := range upd {
		for len(rest) > 0 && rest[0].id < e.id {
			merged = append(merged, rest[0])
			rest = rest[1:]
		}
		var was int64
		if len(rest) > 0 && rest[0].id == e.id {
			was = rest[0].v
			rest = rest[1:]
		}
		if e.v <= was {
			merged = append(merged, seriesValue{e.id, was})
			continue
		}
		merged = append(merged, e)
		k := s.series.keys[e.id]
		delta := e.v - was
		s.totals[k] = sat.Add(s.totals[k], delta)
		changed = true
		if pricedGrowth[k.Fam] {
			grown[k] = delta
		}
		if itemSpread[k.Fam] {
			spread.grow(k, delta)
		}
	}
	rec.contrib = append(merged, rest...)
	// Dollars follow token growth at today's prices, so a price change
	// never re-prices tokens already counted.
	chargeGrowth(res.rates, grown, func(k SeriesKey, v int64, tokens SeriesKey) {
		s.addTo(rec, k, v)
		if k.Fam == FamCost {
			spread.charge(k, v, tokens)
		}
	})
	spread.commit()
	// The record gets a copy, always: the buffer is the next Apply's.
	// addTo may have moved the series to a larger array: keep that one.
	s.mergeBuf = rec.contrib[:0]
	rec.contrib = copyExact(rec.contrib)
	return changed
}

// copyExact is a copy of c in an array of its own length.
func copyExact(c compactContribution) compactContribution {
	out := make(compactContribution, len(c))
	copy(out, c)
	return out
}

// covers reports whether snapshot c, with the thread's retired part, gives
// at least what the thread counted in every series its items give.
func (s *ThreadStore) covers(rec *threadRecord, c contribution) bool {
	retired := rec.more().retired
	for _, e := range rec.contrib {
		k := s.series.keys[e.id]
		if !itemFamilies[k.Fam] {
			continue
		}
		v := c[k]
		if i, ok := retired.find(e.id); ok {
			v = sat.Add(v, retired[i].v)
		}
		if v < e.v {
			return false
		}
	}
	return true
}

// retire keeps what a thread's missing items counted. Items the thread had
// are gone from the snapshot c (a truncation: an edited prompt drops what
// followed it), so per-series max-merging would count its new items only
// beyond the old sums. What was counted, less what the items still present
// give now (c without the new items, fresh), is what the missing items
// counted: it is kept as the thread's retired part and added to every
// snapshot from now on. Items still present that also grew in this very
// snapshot make the retired part smaller than it was, never larger: the
// rule may undercount such a rewrite, never count anything twice.
func (s *ThreadStore) retire(rec *threadRecord, c, fresh contribution) {
	var retired contribution
	for _, e := range rec.contrib {
		k := s.series.keys[e.id]
		if k.Fam == FamCost || k.Fam == FamUnpriced {
			continue // follow token growth
		}
		if v := e.v - (c[k] - fresh[k]); v > 0 {
			if retired == nil {
				retired = contribution{}
			}
			retired[k] = v
		}
	}
	rec.change(func(x *threadExtra) { x.retired = s.series.compact(retired) })
}

func (s *ThreadStore) addTo(rec *threadRecord, k SeriesKey, v int64) {
	if v <= 0 {
		return
	}
	s.totals[k] = sat.Add(s.totals[k], v)
	id := s.series.id(k)
	if i, ok := rec.contrib.find(id); ok {
		rec.contrib[i].v = sat.Add(rec.contrib[i].v, v)
	} else {
		rec.contrib = slices.Insert(rec.contrib, i, seriesValue{id, v})
	}
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
	s.changedFiles[path] = struct{}{}
	s.lastChange = s.now()
	s.generation++
}

// ThreadsKey is a series of amp_threads: the threads present of one agent
// mode and repository.
type ThreadsKey struct{ AgentMode, Repository string }

// ThreadSnapshot is a consistent copy of the store for one scrape.
type ThreadSnapshot struct {
	totals       contribution
	Threads      map[ThreadsKey]int // distinct threads present
	LastActivity time.Time          // zero when no thread has a timestamp
	LastChange   time.Time
}

// Totals are the snapshot's series, in fixed point (Unfixed converts).
func (s ThreadSnapshot) Totals() map[SeriesKey]int64 { return s.totals }

// Snapshot copies what a scrape needs under the read lock.
func (s *ThreadStore) Snapshot() ThreadSnapshot {
	s.mu.RLock()
	defer s.mu.RUnlock()
	snap := ThreadSnapshot{
		totals:     maps.Clone(s.totals),
		Threads:    map[ThreadsKey]int{},
		LastChange: s.lastChange,
	}
	seen := make(map[string]bool, len(s.files))
	counts := make([]int, len(s.tkeys))
	for _, f := range s.files {
		if !seen[f.Key] {
			seen[f.Key] = true
			counts[f.tk]++
		}
	}
	for i, n := range counts {
		if n > 0 {
			snap.Threads[s.tkeys[i]] += n
		}
	}
	if s.lastActivity > 0 {
		snap.LastActivity = time.UnixMilli(s.lastActivity)
	}
	return snap
}

// PresentThreads is the number of distinct threads present now (what
// amp_threads adds up for this store), without copying the totals.
func (s *ThreadStore) PresentThreads() int {
	s.mu.RLock()
	defer s.mu.RUnlock()
	seen := make(map[string]struct{}, len(s.files))
	for _, f := range s.files {
		seen[f.Key] = struct{}{}
	}
	return len(seen)
}

// Generation changes whenever the store does; the state writer saves only
// when it moved.
func (s *ThreadStore) Generation() uint64 {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.generation
}
