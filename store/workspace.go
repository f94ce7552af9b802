package store

import (
	"maps"
	"math"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/amp-exporter/amp-exporter/internal/sat"
	"github.com/amp-exporter/amp-exporter/ledger"
	"github.com/amp-exporter/amp-exporter/parser/gitremote"
)

// The workspace source (source/workspace) counts what Amp's workspace API
// reports for a whole workspace into a WorkspaceStore of its own. Two
// views are kept apart so that no dollar counts twice: each thread's
// usage (cumulative per thread) drives the money and token families
// under source="workspace", and the daily rollup (per member, day and
// model) drives families of its own that are never added to them.
//
// Every figure only grows. A thread's usage is kept, per model, at the
// highest value counted: growth above it is counted, a value below it is
// a restatement (counted in Restatements, never subtracted), and the
// growth that may follow one is counted only past the old high mark.

// SourceWorkspace is the source label value of the workspace source.
const SourceWorkspace = "workspace"

// UserLabel is the label the workspace's series carry besides the shared
// families' own.
const UserLabel = "user"

// Workspace thread skip reasons.
const (
	WorkspaceSkipSubThread  = "sub_thread"
	WorkspaceSkipPastWindow = "past_window"
	WorkspaceSkipNotFound   = "not_found"
)

// The endpoint label values of restatements (the API client's names).
const (
	WorkspaceEndpointUsage = "thread_usage"
	WorkspaceEndpointDaily = "daily_usage"
)

// WorkspaceSkipReasons are the reasons a listed thread is not counted.
var WorkspaceSkipReasons = []string{WorkspaceSkipSubThread, WorkspaceSkipPastWindow, WorkspaceSkipNotFound}

// WorkspaceModel is one model's usage of a thread, cumulative.
type WorkspaceModel struct {
	Model string
	// Tokens are in TokenTypes order (input, output, cache_read,
	// cache_creation).
	Tokens [4]uint64
	// USD is Amp's own dollars for the model.
	USD float64
}

// WorkspaceUsage is a main thread's usage as the API reports it now.
type WorkspaceUsage struct {
	ID string
	// User is the creator's Amp user id; Repository the thread's first
	// listed repository, raw (normalised and stripped of credentials
	// here); "" without one.
	User, Repository string
	Updated          time.Time
	// USD is the thread's own total (the parent's, sub-threads in).
	USD    float64
	Models []WorkspaceModel
}

// wsModel is what was counted of one model of a thread: the high mark.
type wsModel struct {
	name, label string // as the API names it; as the label shows it
	tokens      [4]uint64
	usd         float64
}

// wsThread is what was counted of one thread. Its labels are pinned when
// the thread is first counted, so a change of the rules or of the cap
// never moves what it counted.
type wsThread struct {
	updated    int64 // unix ms of the updatedAt counted
	user, repo string
	usd        float64
	skip       string
	pinned     bool // user and repo are set
	models     []wsModel
}

// WSKey names a series of the workspace store: L1 and L2 are the family's
// own labels (model and token type for tokens, model for the dollars,
// kind for lines), then repository and user.
type WSKey struct {
	L1, L2, Repo, User string
}

// WSDay names one member's day and model in the rollup.
type WSDay struct {
	Day, User, Model string
}

// WSDayCounted is what was counted of one member's day (Model ""): its
// lines; or of one model of it: its dollars.
type WSDayCounted struct {
	USD                      float64   `json:",omitempty"`
	Tokens                   [4]uint64 `json:",omitempty"`
	Added, Deleted, Modified uint64    `json:",omitempty"`
}

// WorkspaceStore keeps the workspace source's counters and what each
// thread and open day counted. Safe for concurrent use.
type WorkspaceStore struct {
	labels *LabelCap
	repos  *Repositories

	mu      sync.RWMutex
	threads map[string]*wsThread
	// names interns model names: a few models for thousands of threads.
	names map[string]string
	// emails maps a creator's user id to the member's e-mail, from the
	// rollup (user_label: email).
	emails    map[string]string
	userLabel string

	tokens  map[WSKey]uint64  // L1 model, L2 token type
	cost    map[WSKey]float64 // L1 model
	billed  map[WSKey]float64 // L1 kind ("total")
	daily   map[WSKey]float64 // L1 model, User
	lines   map[WSKey]uint64  // L1 kind, User
	restate map[string]uint64 // per endpoint
	// days is what was counted of the rollup's open days.
	days map[WSDay]WSDayCounted
	// lastDay is the newest day of the rollup read (YYYY-MM-DD).
	lastDay string
	// ledger is the usage ledger from the rollup, per day, user and model.
	ledger map[wsLedgerKey]ledger.Usage
	// ledgerNames are the user and model label values the ledger's keys
	// name by index: a key of 12 bytes rather than 40, for the year of
	// days × members × models a workspace's ledger holds.
	ledgerNames []string
	ledgerIndex map[string]uint32

	generation uint64
	changed    bool
}

// User label modes.
const (
	UserLabelID    = "id"
	UserLabelEmail = "email"
	UserLabelOff   = "off"
)

// NewWorkspaceStore returns an empty store whose labels are capped by
// labels and whose repository label follows repos (either may be nil).
func NewWorkspaceStore(labels *LabelCap, repos *Repositories) *WorkspaceStore {
	if labels == nil {
		labels = NewLabelCap(0, nil)
	}
	return &WorkspaceStore{
		labels: labels, repos: repos, userLabel: UserLabelID,
		threads: map[string]*wsThread{}, names: map[string]string{}, emails: map[string]string{},
		tokens: map[WSKey]uint64{}, cost: map[WSKey]float64{}, billed: map[WSKey]float64{},
		daily: map[WSKey]float64{}, lines: map[WSKey]uint64{}, restate: map[string]uint64{},
		days: map[WSDay]WSDayCounted{}, ledger: map[wsLedgerKey]ledger.Usage{},
		ledgerIndex: map[string]uint32{},
	}
}

// SetUserLabel sets what the user label holds for threads and days
// counted from now on: UserLabelID, UserLabelEmail or UserLabelOff.
func (s *WorkspaceStore) SetUserLabel(mode string) {
	s.mu.Lock()
	s.userLabel = mode
	s.mu.Unlock()
}

// SetEmail records a member's e-mail for user id (from the rollup).
func (s *WorkspaceStore) SetEmail(id, email string) {
	if id == "" || email == "" {
		return
	}
	s.mu.Lock()
	s.emails[id] = email
	s.mu.Unlock()
}

// userValueLocked is the user label value of Amp user id.
func (s *WorkspaceStore) userValueLocked(id string) string {
	switch s.userLabel {
	case UserLabelOff:
		return ""
	case UserLabelEmail:
		if e, ok := s.emails[id]; ok {
			id = e
		}
	}
	if id == "" {
		return UnknownValue
	}
	return s.labels.value(UserLabel, id)
}

// Counted tells whether thread id was counted (or skipped) at updated or
// later: fetching its usage again would find nothing new.
func (s *WorkspaceStore) Counted(id string, updated time.Time) bool {
	s.mu.RLock()
	defer s.mu.RUnlock()
	t := s.threads[id]
	if t == nil {
		return false
	}
	switch t.skip {
	case WorkspaceSkipPastWindow:
		return true // never asked again: its usage is gone for good
	case WorkspaceSkipNotFound:
		// Not asked again, unless the listing shows it changed since.
		return updated.IsZero() || updated.UnixMilli() <= t.updated
	}
	return !updated.IsZero() && t.updated >= updated.UnixMilli()
}

// Skipped reports the reason thread id is not counted, "" for none.
func (s *WorkspaceStore) Skipped(id string) string {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if t := s.threads[id]; t != nil {
		return t.skip
	}
	return ""
}

// Skip records that thread id will not be counted for reason (past the
// window or not found): it is not asked for again. What it counted
// before stays counted. It reports whether the reason is new.
func (s *WorkspaceStore) Skip(id, reason string, updated time.Time) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	t := s.threads[id]
	if t == nil {
		t = &wsThread{}
		s.threads[id] = t
	}
	if !updated.IsZero() && updated.UnixMilli() > t.updated {
		t.updated = updated.UnixMilli()
		s.changed = true
	}
	if t.skip == reason {
		return false
	}
	t.skip = reason
	s.changed = true
	s.generation++
	return true
}

// growth is what goes above the high mark: the difference when now is
// higher, and whether now is lower (a restatement).
func growth(mark, now uint64) (uint64, bool) {
	if now >= mark {
		return now - mark, false
	}
	return 0, true
}

func growthUSD(mark, now float64) (float64, bool) {
	if math.IsNaN(now) || math.IsInf(now, 0) || now < 0 {
		return 0, false
	}
	if now >= mark {
		return now - mark, false
	}
	return 0, true
}

// ApplyUsage counts a main thread's usage: per model and token type the
// growth above what was counted, and the thread's dollars. It reports
// whether anything grew and whether any figure went down (a restatement,
// counted once per answer).
func (s *WorkspaceStore) ApplyUsage(u WorkspaceUsage) (grew, restated bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	t := s.threads[u.ID]
	if t == nil {
		t = &wsThread{}
		s.threads[u.ID] = t
	}
	if t.skip != "" {
		t.skip = "" // served again (a thread that came back)
	}
	if !t.pinned {
		t.user = s.userValueLocked(u.User)
		t.repo = s.repoValueLocked(u.Repository)
		t.pinned = true
	}
	for _, m := range u.Models {
		i := -1
		for j := range t.models {
			if t.models[j].name == m.Model {
				i = j
				break
			}
		}
		if i < 0 {
			t.models = append(t.models, s.newModelLocked(m.Model))
			i = len(t.models) - 1
		}
		c := &t.models[i]
		label := c.label
		for k, n := range m.Tokens {
			d, down := growth(c.tokens[k], n)
			restated = restated || down
			if d > 0 {
				c.tokens[k] = n
				s.tokens[WSKey{L1: label, L2: TokenTypes[k], Repo: t.repo, User: t.user}] += d
				grew = true
			}
		}
		d, down := growthUSD(c.usd, m.USD)
		restated = restated || down
		if d > 0 {
			c.usd = m.USD
			s.cost[WSKey{L1: label, Repo: t.repo, User: t.user}] += d
			grew = true
		}
	}
	// A model counted before and missing now went down to nothing.
	for _, c := range t.models {
		found := false
		for _, m := range u.Models {
			if m.Model == c.name {
				found = true
				break
			}
		}
		if !found && (c.usd > 0 || c.tokens != [4]uint64{}) {
			restated = true
		}
	}
	d, down := growthUSD(t.usd, u.USD)
	restated = restated || down
	if d > 0 {
		t.usd = u.USD
		s.billed[WSKey{L1: "total", Repo: t.repo, User: t.user}] += d
		grew = true
	}
	if !u.Updated.IsZero() {
		t.updated = max(t.updated, u.Updated.UnixMilli())
	}
	if restated {
		s.restate[WorkspaceEndpointUsage]++
	}
	s.changed = true
	s.generation++
	return grew, restated
}

// newModelLocked is a model's record, its name interned and its label
// capped.
func (s *WorkspaceStore) newModelLocked(name string) wsModel {
	n, ok := s.names[name]
	if !ok {
		n = strings.Clone(name)
		s.names[n] = n
	}
	label := n
	if label == "" {
		label = UnknownValue
	}
	return wsModel{name: n, label: s.labels.value("model", label)}
}

// repoValueLocked is the repository label value of a raw remote.
func (s *WorkspaceStore) repoValueLocked(raw string) string {
	norm, reason := gitremote.Normalize(raw)
	if norm == "" {
		s.repos.unreadable(reason)
		return ""
	}
	return s.repos.value(s.labels, norm)
}

// WorkspaceDay is one member's day of the rollup as the API reports it
// now.
type WorkspaceDay struct {
	Day, User                string // YYYY-MM-DD; the rollup's user id
	Added, Deleted, Modified uint64
	// Models are the member's dollars that day per model.
	Models map[string]float64
	// Tokens are the member's tokens that day per model, in TokenTypes
	// order (the usage ledger's; none is fine).
	Tokens map[string][4]uint64
}

// ApplyDay counts a member's day of the rollup: the growth of its
// dollars per model and of its lines over what was counted. A figure
// lower than counted is a restatement of the rollup (counted once per day
// and member), never subtracted. It reports the growth in dollars per
// model (for the usage ledger).
func (s *WorkspaceStore) ApplyDay(d WorkspaceDay) (grown map[string]float64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	user := s.userValueLocked(d.User)
	restated := false
	models := make(map[string]bool, len(d.Models)+len(d.Tokens))
	for m := range d.Models {
		models[m] = true
	}
	for m := range d.Tokens {
		models[m] = true
	}
	for model := range models {
		k := WSDay{Day: d.Day, User: d.User, Model: model}
		c := s.days[k]
		label := model
		if label == "" {
			label = UnknownValue
		}
		label = s.labels.value("model", label)
		var led ledgerUsage
		g, down := growthUSD(c.USD, d.Models[model])
		restated = restated || down
		if g > 0 {
			// In the ledger's fixed point, the difference of the marks:
			// rounding does not add up over a day's many reads.
			led.cost = fixedUSD(d.Models[model]) - fixedUSD(c.USD)
			c.USD = d.Models[model]
			s.daily[WSKey{L1: label, User: user}] += g
			if grown == nil {
				grown = map[string]float64{}
			}
			grown[model] += g
		}
		for i, n := range d.Tokens[model] {
			tg, down := growth(c.Tokens[i], n)
			restated = restated || down
			c.Tokens[i] += tg
			led.tokens[i] = tg
		}
		if c != (WSDayCounted{}) {
			s.days[k] = c
		}
		s.addLedgerLocked(d.Day, user, label, led)
	}
	k := WSDay{Day: d.Day, User: d.User}
	c := s.days[k]
	for _, f := range []struct {
		kind string
		mark *uint64
		now  uint64
	}{{"added", &c.Added, d.Added}, {"deleted", &c.Deleted, d.Deleted}, {"modified", &c.Modified, d.Modified}} {
		g, down := growth(*f.mark, f.now)
		restated = restated || down
		if g > 0 {
			*f.mark = f.now
			s.lines[WSKey{L1: f.kind, User: user}] += g
		}
	}
	if c != (WSDayCounted{}) {
		s.days[k] = c
	}
	if restated {
		s.restate[WorkspaceEndpointDaily]++
	}
	s.changed = true
	s.generation++
	return grown
}

// ledgerUsage is the growth of one member's day and model.
type ledgerUsage struct {
	tokens [4]uint64
	cost   int64 // 1e-10 USD
}

// fixedUSD is usd in the ledger's 1e-10 USD.
func fixedUSD(usd float64) int64 { return int64(math.Round(usd * scaleUSD)) }

// wsLedgerKey is a row of the workspace's usage ledger: a day (days
// since the epoch, the rollup's date taken as UTC), the user label's
// value and the model's (indexes in ledgerNames).
type wsLedgerKey struct {
	day         int32
	user, model uint32
}

const msPerDay = 24 * 60 * 60 * 1000

// ledgerKeyLocked is the key of a row; start is epoch ms.
func (s *WorkspaceStore) ledgerKeyLocked(start int64, user, model string) wsLedgerKey {
	name := func(v string) uint32 {
		i, ok := s.ledgerIndex[v]
		if !ok {
			i = uint32(len(s.ledgerNames))
			s.ledgerNames = append(s.ledgerNames, v)
			s.ledgerIndex[v] = i
		}
		return i
	}
	return wsLedgerKey{day: int32(start / msPerDay), user: name(user), model: name(model)}
}

// entryLocked is the ledger entry of a row; session is prefixed to the
// user's value.
func (s *WorkspaceStore) entryLocked(k wsLedgerKey, u ledger.Usage, session string) ledger.Entry {
	return ledger.Entry{Start: int64(k.day) * msPerDay, Session: session + s.ledgerNames[k.user], Model: s.ledgerNames[k.model], Usage: u}
}

// addLedgerLocked adds a member's day's growth to the usage ledger.
func (s *WorkspaceStore) addLedgerLocked(day, user, model string, u ledgerUsage) {
	if u == (ledgerUsage{}) {
		return
	}
	d, err := time.Parse(time.DateOnly, day)
	if err != nil {
		return // not a date: counted, in no day
	}
	k := s.ledgerKeyLocked(d.UnixMilli(), user, model)
	v := s.ledger[k]
	v.Input = sat.Add(v.Input, satInt(u.tokens[0]))
	v.Output = sat.Add(v.Output, satInt(u.tokens[1]))
	v.CacheRead = sat.Add(v.CacheRead, satInt(u.tokens[2]))
	v.CacheCreation = sat.Add(v.CacheCreation, satInt(u.tokens[3]))
	v.Cost = sat.Add(v.Cost, u.cost)
	s.ledger[k] = v
}

func satInt(n uint64) int64 {
	if n > math.MaxInt64 {
		return math.MaxInt64
	}
	return int64(n)
}

// WorkspaceLedgerSession prefixes the session of the workspace's ledger
// rows: one pseudo-thread per user label value.
const WorkspaceLedgerSession = "workspace:"

// Ledger returns the workspace's usage ledger: per day, user and model
// what the rollup reported (its dollars as the estimated cost: for this
// source they are Amp's own figure).
func (s *WorkspaceStore) Ledger() []ledger.Entry {
	return s.LedgerBetween(math.MinInt64, math.MaxInt64)
}

// LedgerBetween is Ledger for the days that start in [from, to).
func (s *WorkspaceStore) LedgerBetween(from, to int64) []ledger.Entry {
	s.mu.RLock()
	defer s.mu.RUnlock()
	out := make([]ledger.Entry, 0, len(s.ledger))
	for k, u := range s.ledger {
		if start := int64(k.day) * msPerDay; start >= from && start < to {
			out = append(out, s.entryLocked(k, u, WorkspaceLedgerSession))
		}
	}
	slices.SortFunc(out, ledger.Compare)
	return out
}

// Generation moves whenever the store counts something.
func (s *WorkspaceStore) Generation() uint64 {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.generation
}

// DropDaysBefore forgets what was counted of the rollup's days before
// day (YYYY-MM-DD): days the source no longer reads again, settled. The
// days kept are copied to a map of their own size: a map does not shrink,
// and the first sync fills it with a year of days.
func (s *WorkspaceStore) DropDaysBefore(day string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	keep := 0
	for k := range s.days {
		if k.Day >= day {
			keep++
		}
	}
	if keep == len(s.days) {
		return
	}
	days := make(map[WSDay]WSDayCounted, keep)
	for k, c := range s.days {
		if k.Day >= day {
			days[k] = c
		}
	}
	s.days = days
	s.changed = true
}

// LastDay is the newest day of the rollup read, false before the first
// read (the first run reads history_days back, later ones from there).
func (s *WorkspaceStore) LastDay() (time.Time, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	d, err := time.Parse(time.DateOnly, s.lastDay)
	return d, err == nil
}

// SetLastDay records the newest day of the rollup read.
func (s *WorkspaceStore) SetLastDay(d time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if v := d.Format(time.DateOnly); v != s.lastDay {
		s.lastDay = v
		s.changed = true
	}
}

// Threads is how many threads the store holds a record of.
func (s *WorkspaceStore) Threads() int {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return len(s.threads)
}

// WorkspaceSnapshot is a copy of the store's counters.
type WorkspaceSnapshot struct {
	Tokens       map[WSKey]uint64
	Cost, Billed map[WSKey]float64
	DailyUSD     map[WSKey]float64
	Lines        map[WSKey]uint64
	Restatements map[string]uint64
}

// Snapshot copies the counters.
func (s *WorkspaceStore) Snapshot() WorkspaceSnapshot {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return WorkspaceSnapshot{
		Tokens: maps.Clone(s.tokens), Cost: maps.Clone(s.cost), Billed: maps.Clone(s.billed),
		DailyUSD: maps.Clone(s.daily), Lines: maps.Clone(s.lines), Restatements: maps.Clone(s.restate),
	}
}

// WorkspaceState is what the store persists: per thread what it counted
// (no answer kept, only the high marks), the open days of the rollup and
// the counters. Field names are short: a workspace has hundreds of
// thousands of threads.
type WorkspaceState struct {
	LastDay string          `json:"last_day,omitempty"`
	Threads []WSThreadState `json:"t,omitempty"`
	Days    []WSDayState    `json:"d,omitempty"`
	Tokens  []WSCounter     `json:"tokens,omitempty"`
	Cost    []WSCounter     `json:"cost,omitempty"`
	Billed  []WSCounter     `json:"billed,omitempty"`
	Daily   []WSCounter     `json:"daily,omitempty"`
	Lines   []WSCounter     `json:"lines,omitempty"`
	// Restatements per endpoint.
	Restatements map[string]uint64 `json:"restatements,omitempty"`
	// Ledger is the usage ledger's rows (their session without the
	// prefix: the user label's value).
	Ledger []ledger.Entry `json:"ledger,omitempty"`
}

// WSThreadState is one thread's record.
type WSThreadState struct {
	ID      string         `json:"i"`
	Updated int64          `json:"u,omitempty"`
	User    string         `json:"w,omitempty"`
	Repo    string         `json:"r,omitempty"`
	USD     float64        `json:"c,omitempty"`
	Skip    string         `json:"s,omitempty"`
	Models  []WSModelState `json:"m,omitempty"`
}

// WSModelState is one model's high marks: the name, the four token
// counts in TokenTypes order, the dollars.
type WSModelState struct {
	Name   string    `json:"n"`
	Label  string    `json:"l,omitempty"` // when not the name
	Tokens [4]uint64 `json:"k"`
	USD    float64   `json:"c,omitempty"`
}

// WSDayState is one open day's counted figures.
type WSDayState struct {
	WSDay
	WSDayCounted
}

// WSCounter is one series' value: integer counts in N, dollars in V.
type WSCounter struct {
	WSKey
	N uint64  `json:",omitempty"`
	V float64 `json:",omitempty"`
}

// Export copies what the store counted, for the state file.
func (s *WorkspaceStore) Export() WorkspaceState {
	s.mu.RLock()
	defer s.mu.RUnlock()
	st := WorkspaceState{LastDay: s.lastDay, Threads: make([]WSThreadState, 0, len(s.threads)), Restatements: maps.Clone(s.restate)}
	for id, t := range s.threads {
		ts := WSThreadState{ID: id, Updated: t.updated, User: t.user, Repo: t.repo, USD: t.usd, Skip: t.skip}
		for _, m := range t.models {
			ms := WSModelState{Name: m.name, Tokens: m.tokens, USD: m.usd}
			if m.label != m.name {
				ms.Label = m.label
			}
			ts.Models = append(ts.Models, ms)
		}
		st.Threads = append(st.Threads, ts)
	}
	for k, c := range s.days {
		st.Days = append(st.Days, WSDayState{k, c})
	}
	for k, u := range s.ledger {
		st.Ledger = append(st.Ledger, s.entryLocked(k, u, ""))
	}
	for k, v := range s.tokens {
		st.Tokens = append(st.Tokens, WSCounter{WSKey: k, N: v})
	}
	for k, v := range s.lines {
		st.Lines = append(st.Lines, WSCounter{WSKey: k, N: v})
	}
	for _, f := range []struct {
		m   map[WSKey]float64
		out *[]WSCounter
	}{{s.cost, &st.Cost}, {s.billed, &st.Billed}, {s.daily, &st.Daily}} {
		for k, v := range f.m {
			*f.out = append(*f.out, WSCounter{WSKey: k, V: v})
		}
	}
	return st
}

// Import replaces the store's contents with a state Export made. The
// label values are those pinned when each thread was first counted (the
// cap's admissions are the shared LabelCap's, persisted with the main
// state).
func (s *WorkspaceStore) Import(st WorkspaceState) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.lastDay = st.LastDay
	s.threads = make(map[string]*wsThread, len(st.Threads))
	for _, ts := range st.Threads {
		t := &wsThread{updated: ts.Updated, user: ts.User, repo: ts.Repo, usd: ts.USD, skip: ts.Skip, pinned: true}
		for _, ms := range ts.Models {
			m := s.newModelLocked(ms.Name)
			if ms.Label != "" {
				m.label = ms.Label
			}
			m.tokens, m.usd = ms.Tokens, ms.USD
			t.models = append(t.models, m)
		}
		s.threads[ts.ID] = t
	}
	s.days = make(map[WSDay]WSDayCounted, len(st.Days))
	for _, d := range st.Days {
		s.days[d.WSDay] = d.WSDayCounted
	}
	s.tokens, s.lines = map[WSKey]uint64{}, map[WSKey]uint64{}
	s.cost, s.billed, s.daily = map[WSKey]float64{}, map[WSKey]float64{}, map[WSKey]float64{}
	for _, c := range st.Tokens {
		s.tokens[c.WSKey] += c.N
	}
	for _, c := range st.Lines {
		s.lines[c.WSKey] += c.N
	}
	for _, f := range []struct {
		in []WSCounter
		m  map[WSKey]float64
	}{{st.Cost, s.cost}, {st.Billed, s.billed}, {st.Daily, s.daily}} {
		for _, c := range f.in {
			f.m[c.WSKey] += c.V
		}
	}
	s.restate = map[string]uint64{}
	maps.Copy(s.restate, st.Restatements)
	s.ledger = make(map[wsLedgerKey]ledger.Usage, len(st.Ledger))
	s.ledgerNames, s.ledgerIndex = nil, map[string]uint32{}
	for _, e := range st.Ledger {
		k := s.ledgerKeyLocked(e.Start, e.Session, e.Model)
		v := s.ledger[k]
		v.Add(e.Usage)
		s.ledger[k] = v
	}
	s.generation++
	s.changed = false
}

// Changed reports whether anything was counted since the last call.
func (s *WorkspaceStore) Changed() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.changed
	s.changed = false
	return c
}
