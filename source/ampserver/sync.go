package ampserver

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/amp-exporter/amp-exporter/internal/clock"
	"github.com/amp-exporter/amp-exporter/parser/thread"
	"github.com/amp-exporter/amp-exporter/store"
)

// Store is the counting store the server's threads go into (a
// *store.ThreadStore of their own).
type Store interface {
	File(path string) (store.FileRecord, bool)
	Apply(path string, v store.FileVersion, sum *thread.Summary) bool
	Remove(path string)
	ApplyBilled(key string, usd map[string]float64) bool
	AmpServerPaths() []string
}

// WindowStore is a Store that counts threads read as windows (a
// *store.ThreadStore); with a Store that does not, threads are read whole.
type WindowStore interface {
	Store
	Window(path string) (store.Window, bool)
	ApplyWindow(path string, v store.FileVersion, sum *thread.Summary, w store.Window, next *store.NextWindow) (bool, error)
}

// Metrics are the exporter metrics a sync reports to.
type Metrics interface {
	ParseFailed(source, reason string)
	Parsed(source string, d time.Duration)
}

// SourceMetrics are the server source's own metrics.
type SourceMetrics interface {
	Up(ok bool)
	Synced(at time.Time)
	SetEntitlement(e store.Entitlement)
	// ThreadSkipped counts a listed thread that is not counted, once per
	// thread and reason.
	ThreadSkipped(reason string)
}

// ErrListingTooLong ends a sync whose listing passed the bounds of one
// sync (SyncConfig.MaxListPages, MaxListed).
var ErrListingTooLong = errors.New("amp server: the thread listing does not end within the bounds of one sync")

// SkipOtherUser is the reason a thread another user created (a workspace
// thread shared with the account) is not counted.
const SkipOtherUser = "other_user"

// Syncing tells the stream-json store how the server's syncs go, so a
// run the server does not list is counted from its stream.
type Syncing interface {
	AmpServerSynced()
}

// SyncConfig configures a Syncer.
type SyncConfig struct {
	Interval     time.Duration // between routine syncs
	FullInterval time.Duration // between full listings
	// AuthRetry is the wait after the key was refused (default 5m); after
	// the CLI's login was found gone, the next try waits Interval only.
	AuthRetry       time.Duration
	IncludeArchived bool
	InstallationID  string
	MaxConcurrency  int
	MaxThreadBytes  int64 // largest thread document
	// ListLimit is listThreads' page size (default and maximum 500).
	ListLimit int
	// MaxListPages and MaxListed bound one sync's listing: a server whose
	// pages never end must not grow the exporter without bound (defaults
	// 1,000 pages and 100,000 threads).
	MaxListPages int
	MaxListed    int
	// Billed turns on threadDisplayCostInfo for changed threads.
	Billed bool
	// BillRecheck: at a full listing, the bills of threads active within
	// it (by their last interaction) are read again even when the thread
	// did not change, for Amp may re-price a thread without a new `v`
	// (default 72h; negative: never). At most MaxBillRechecks a listing
	// (default 500).
	BillRecheck     time.Duration
	MaxBillRechecks int
	// DayBillHorizon: with Billed, the bill of each day (of Location) a
	// changed thread was active is asked too, for the days that end
	// within the horizon (default 35 days; negative: no day bills).
	// MaxDayBills bounds those requests per sync (default 200); what is
	// left waits for the next sync (daybills.go).
	DayBillHorizon time.Duration
	MaxDayBills    int
	// Location is the time zone of the days (default time.Local).
	Location *time.Location
	// WindowOverlap is how many of the messages counted last time a
	// thread counted before is read again with what is new (window.go;
	// default 16). Negative: threads are always read whole.
	WindowOverlap int
}

// Syncer keeps a store in step with the account's threads on the server.
type Syncer struct {
	client  *Client
	cfg     SyncConfig
	store   Store
	owners  *store.Owners
	metrics Metrics
	source  SourceMetrics
	streams Syncing
	log     *slog.Logger
	clock   clock.Clock

	onAccount func(UserInfo)
	onPass    func()

	mu           sync.Mutex
	lastComplete time.Time // start of the last complete sync
	lastFull     time.Time // start of the last complete full listing
	// user is the account, once getUserInfo answered.
	user *UserInfo
	// otherUser holds the threads skipped as another user's (counted in
	// the metric once each).
	otherUser map[string]bool
	bugMu     sync.Mutex
	bugLogged map[string]bool // methods whose invalid-argument was logged
	// unreadable holds how threads that could not be read (too
	// large, a shape not understood) were listed: like a local file that does not
	// parse, such a thread is a parse error once and is read again when
	// it changes, not on every sync. Written by fetch workers under
	// fetchAll's lock, read by Sync between fetches.
	unreadable map[string]listing
	winMu      sync.Mutex
	winStats   WindowStats
	// entMu guards entAsked and entResets: when the entitlement window
	// was last asked for (with a bill, or on its own) and when the window
	// it gave resets.
	entMu     sync.Mutex
	entAsked  time.Time
	entResets time.Time
	// dayBillsOff: the server refused a day's bill as invalid (its API
	// changed): no more are asked until a restart. dayBillsWarned: a
	// failure was logged at warn level since the last pass that failed
	// nothing. Sync's own (under mu).
	dayBillsOff    bool
	dayBillsWarned bool
	// dayBillsIdle: the last pass asked every due day there was, and no
	// day was marked since, so the next pass need not look for any (a
	// look goes through every thread of the store).
	dayBillsIdle atomic.Bool
}

// SyncOptions are a Syncer's collaborators; Owners, Streams and Source may
// be nil.
type SyncOptions struct {
	Owners  *store.Owners
	Metrics Metrics
	Source  SourceMetrics
	Streams Syncing
	Logger  *slog.Logger
	Clock   clock.Clock
	// OnAccount is called once, when getUserInfo first answers (also
	// when the key was refused at start-up and works later).
	OnAccount func(UserInfo)
	// OnPass is called after every sync that passed over the whole
	// listing (Stats.Passed), complete or not: a thread that keeps
	// failing must not hide what every other thread counted, as a local
	// file that cannot be read does not hold up the first scan.
	OnPass func()
}

// NewSyncer returns a syncer; nothing happens until Run or Sync.
func NewSyncer(c *Client, cfg SyncConfig, store Store, opts SyncOptions) *Syncer {
	if cfg.Interval <= 0 {
		cfg.Interval = time.Minute
	}
	if cfg.FullInterval <= 0 {
		cfg.FullInterval = 6 * time.Hour
	}
	if cfg.AuthRetry <= 0 {
		cfg.AuthRetry = 5 * time.Minute
	}
	if cfg.MaxConcurrency <= 0 {
		cfg.MaxConcurrency = 4
	}
	if cfg.MaxThreadBytes <= 0 {
		cfg.MaxThreadBytes = 64 << 20
	}
	if cfg.ListLimit <= 0 || cfg.ListLimit > 500 {
		cfg.ListLimit = 500
	}
	if cfg.MaxListPages <= 0 {
		cfg.MaxListPages = 1000
	}
	if cfg.MaxListed <= 0 {
		cfg.MaxListed = 100_000
	}
	if cfg.BillRecheck == 0 {
		cfg.BillRecheck = 72 * time.Hour
	}
	if cfg.MaxBillRechecks <= 0 {
		cfg.MaxBillRechecks = 500
	}
	if cfg.DayBillHorizon == 0 {
		cfg.DayBillHorizon = DefaultDayBillHorizon
	}
	if cfg.MaxDayBills <= 0 {
		cfg.MaxDayBills = 200
	}
	if cfg.Location == nil {
		cfg.Location = time.Local
	}
	if cfg.WindowOverlap == 0 {
		cfg.WindowOverlap = 16
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Clock == nil {
		opts.Clock = clock.Real{}
	}
	return &Syncer{client: c, cfg: cfg, store: store, owners: opts.Owners, metrics: opts.Metrics,
		source: opts.Source, streams: opts.Streams, log: opts.Logger, clock: opts.Clock, onAccount: opts.OnAccount, onPass: opts.OnPass,
		unreadable: map[string]listing{}, otherUser: map[string]bool{}, bugLogged: map[string]bool{}}
}

// Stats describe one sync.
type Stats struct {
	Full bool
	// Whole: changed threads are read whole, not by window.
	Whole   bool
	Pages   int // listThreads requests
	Listed  int // threads listed
	Changed int // threads whose `v` changed
	Fetched int // threads fetched and counted
	Gone    int // threads that disappeared
	Skipped int // threads another source counts
	Failed  int // threads that could not be fetched this time
	// Rebilled threads had their bill read again (SyncConfig.BillRecheck).
	Rebilled int
	// DayBills were read (a thread's bill of one day, daybills.go);
	// DayBillsFailed could not be, and are asked again later.
	DayBills       int
	DayBillsFailed int
	// Unreadable threads were fetched but cannot be counted (too large,
	// not understood): a parse error, read again when their `v` changes.
	Unreadable int
	Complete   bool
	// Passed: the listing was whole and every changed thread it showed
	// was tried, read or not (the source's first pass, SyncOptions.OnPass).
	Passed    bool
	StartedAt time.Time
}

// confirmGone asks the server, by id, about threads a full listing did not
// show, and returns those it does not list: the gone ones. The listing is
// paged by offset, so a thread deleted while it is paged moves every later
// thread up one place, and one of them can fall between two pages; taking
// that one for deleted would lower amp_threads until the next full
// listing. Deletions are rare, so this is a request or two.
func (s *Syncer) confirmGone(ctx context.Context, missing []string) ([]string, error) {
	var gone []string
	for len(missing) > 0 {
		batch := missing[:min(len(missing), MaxThreadIDs)]
		missing = missing[len(batch):]
		page, err := s.client.ListThreads(ctx, ListParams{
			IncludeArchived: s.cfg.IncludeArchived,
			InstallationID:  s.cfg.InstallationID,
			Limit:           len(batch),
			ThreadIDs:       batch,
		})
		if err != nil {
			s.noteBug(err)
			return gone, fmt.Errorf("list threads by id: %w", err)
		}
		present := make(map[string]bool, len(page))
		for _, t := range page {
			present[t.ID] = true
		}
		for _, id := range batch {
			if !present[id] {
				gone = append(gone, id)
			}
		}
	}
	return gone, nil
}

// Sync runs one sync: list (newest first, stopping early unless a full
// listing is due), fetch what changed, drop what is gone. A sync that
// fails half-way keeps what it counted; the next one resumes.
func (s *Syncer) Sync(ctx context.Context) (Stats, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	start := s.clock.Now()
	st := Stats{StartedAt: start}
	if s.user == nil {
		// The account's id tells its own threads from those shared with
		// it; asked until it answers (a key refused at start-up may work
		// later).
		u, err := s.client.GetUserInfo(ctx)
		if err != nil {
			s.noteBug(err)
			return st, fmt.Errorf("user info: %w", err)
		}
		s.user = &u
		if s.onAccount != nil {
			s.onAccount(u)
		}
	}
	st.Full = s.lastFull.IsZero() || start.Sub(s.lastFull) >= s.cfg.FullInterval
	listed := map[string]bool{}
	// entries are the threads listed, each once: a thread listed again
	// (it moved while the listing was paged, or a listing that repeats
	// it) is taken as its newest entry, whichever page it is on (at).
	var entries []Summary
	at := map[string]int{}
	newest := "" // the account's newest listed thread
	var listErr error
	for offset := 0; ; offset += s.cfg.ListLimit {
		if st.Pages >= s.cfg.MaxListPages || st.Listed > s.cfg.MaxListed {
			listErr = fmt.Errorf("list threads: %w (%d pages, %d threads)", ErrListingTooLong, st.Pages, st.Listed)
			break
		}
		page, err := s.client.ListThreads(ctx, ListParams{
			IncludeArchived: s.cfg.IncludeArchived,
			InstallationID:  s.cfg.InstallationID,
			Limit:           s.cfg.ListLimit,
			Offset:          offset,
		})
		st.Pages++
		if err != nil {
			s.noteBug(err)
			listErr = fmt.Errorf("list threads: %w", err)
			break
		}
		allOld := true
		fresh := 0 // threads this page lists for the first time
		for _, t := range page {
			if t.ID == "" || len(t.ID) > 128 {
				continue
			}
			if i, ok := at[t.ID]; ok {
				// Listed again: the newer entry wins (the stale one would
				// hide a change for as long as the listing repeats it).
				if newer(t, entries[i]) {
					entries[i] = t
					if s.changed(t, st.Full) {
						allOld = false
					}
				}
				continue
			}
			if listed[t.ID] {
				continue // another user's, skipped on its first entry
			}
			fresh++
			st.Listed++
			listed[t.ID] = true
			if s.otherUsers(t.CreatorUserID) {
				s.skipOther(t.ID)
				st.Skipped++
				continue
			}
			if newest == "" {
				newest = t.ID
			}
			at[t.ID] = len(entries)
			entries = append(entries, t)
			if s.changed(t, st.Full) || s.lastComplete.IsZero() || t.LastActivity() >= s.lastComplete.UnixMilli() {
				allOld = false
			}
		}
		if len(page) < s.cfg.ListLimit {
			break
		}
		if fresh == 0 {
			// A server that ignores offset would be paged for ever.
			listErr = fmt.Errorf("list threads: %w", &Error{Method: MethodListThreads, kind: ErrBadResponse,
				detail: "a full page lists no thread not listed before: the listing does not advance"})
			break
		}
		if !st.Full && allOld {
			break
		}
	}
	if errors.Is(listErr, ErrAuth) || errors.Is(listErr, ErrListingTooLong) {
		// A listing past its bounds is not a listing to act on: its
		// threads could be any number of ids that lead nowhere.
		return st, listErr
	}
	var changed []Summary
	var rebill []string // unchanged threads whose bill is read again
	for _, t := range entries {
		if s.changed(t, st.Full) {
			changed = append(changed, t)
		} else if st.Full && s.cfg.Billed && s.cfg.BillRecheck > 0 && len(rebill) < s.cfg.MaxBillRechecks &&
			t.LastActivity() >= start.Add(-s.cfg.BillRecheck).UnixMilli() && s.counted(t.ID) {
			rebill = append(rebill, t.ID)
		}
	}
	st.Changed = len(changed)
	// A full listing reads changed threads whole, not by window, but for
	// the first (a window restored from the state is as good as one
	// counted by this process).
	st.Whole = st.Full && !s.lastFull.IsZero()
	fetchErr := s.fetchAll(ctx, changed, &st)
	if errors.Is(fetchErr, ErrAuth) || ctx.Err() != nil {
		return st, errors.Join(listErr, fetchErr)
	}
	st.Passed = listErr == nil && ctx.Err() == nil &&
		st.Fetched+st.Gone+st.Skipped+st.Unreadable+st.Failed >= st.Changed
	s.rebill(ctx, rebill, &st)
	s.askDayBills(ctx, &st)
	if newest != "" && s.entitlementDue(start) {
		s.entitlement(ctx, newest, start)
	}
	if st.Full && listErr == nil {
		s.forgetUnlisted(ctx, listed, &st)
	}
	if listErr == nil && st.Failed == 0 {
		st.Complete = true
		s.lastComplete = start
		if st.Full {
			s.lastFull = start
		}
		if s.streams != nil {
			s.streams.AmpServerSynced()
		}
	}
	return st, errors.Join(listErr, fetchErr)
}

// forgetUnlisted acts on a full listing, which shows every thread there
// is: what it does not list was deleted (or archived, without
// include_archived), once the server confirms it. Its counts stay; it only
// leaves amp_threads. The unreadable and other users' threads it does not
// list are forgotten, so their number is bounded by one listing's.
func (s *Syncer) forgetUnlisted(ctx context.Context, listed map[string]bool, st *Stats) {
	var missing []string
	for _, p := range s.store.AmpServerPaths() {
		if id := p[len(store.AmpServerPathPrefix):]; !listed[id] {
			missing = append(missing, id)
		}
	}
	gone, err := s.confirmGone(ctx, missing)
	if err != nil {
		// Those not confirmed stay present until the next full listing.
		s.log.Debug("cannot confirm threads missing from the full listing", "threads", len(missing), "err", err)
	}
	for _, id := range gone {
		s.store.Remove(store.AmpServerPath(id))
		st.Gone++
	}
	for id := range s.unreadable {
		if !listed[id] {
			delete(s.unreadable, id)
		}
	}
	// Likewise the threads skipped as another user's: remembered while
	// they are listed, so their number is bounded by one listing's.
	for id := range s.otherUser {
		if !listed[id] {
			delete(s.otherUser, id)
		}
	}
}

// counted reports whether the server source counts the thread, or keeps
// its bill (bills.go).
func (s *Syncer) counted(id string) bool {
	if s.owners != nil {
		if o := s.owners.Owner(id); o != "" && o != store.SourceAmpServer {
			return s.billKept(id)
		}
	}
	_, ok := s.store.File(store.AmpServerPath(id))
	return ok
}

// otherUsers reports whether creator is another user than the account (a
// thread with no creator is the account's).
func (s *Syncer) otherUsers(creator string) bool {
	return creator != "" && s.user != nil && s.user.ID != "" && creator != s.user.ID
}

// skipOther counts a thread of another user once. One counted before
// (by a version that did not tell them apart) leaves amp_threads; what it
// counted stays, as counters do.
func (s *Syncer) skipOther(id string) {
	if s.otherUser[id] {
		return
	}
	s.otherUser[id] = true
	if _, ok := s.store.File(store.AmpServerPath(id)); ok {
		s.store.Remove(store.AmpServerPath(id))
	}
	if s.source != nil {
		s.source.ThreadSkipped(SkipOtherUser)
	}
}

// noteBug logs an invalid-argument answer once per method: the exporter
// asked for something the server's API does not accept.
func (s *Syncer) noteBug(err error) {
	var e *Error
	if !errors.Is(err, ErrInvalidArgument) || !errors.As(err, &e) {
		return
	}
	s.bugMu.Lock()
	first := !s.bugLogged[e.Method]
	s.bugLogged[e.Method] = true
	s.bugMu.Unlock()
	if first {
		s.log.Error("the Amp server refused a request as invalid: a bug of the exporter or a change of Amp's API; please report it",
			"method", e.Method, "err", err)
	}
}

// newer reports whether a is a newer entry of a thread than b: a higher
// `v`, else a later last interaction, else more messages.
func newer(a, b Summary) bool {
	if a.V != b.V {
		return a.V > b.V
	}
	if a.LastActivity() != b.LastActivity() {
		return a.LastActivity() > b.LastActivity()
	}
	return a.MessageCount > b.MessageCount
}

// changed reports whether a listed thread needs fetching, when no other
// source counts it: its `v`, its messageCount or its last interaction
// differs from what was listed when it was read (a server can list a
// thread that grew under the `v` it was counted at). A thread listed
// without `v` is also read again at a full listing (full): a change that
// moves neither count nor interaction (an answer still streaming, a tool
// result filled in) waits for it. So is a thread last counted from a
// window (window.go): what lies before its window was not read since.
func (s *Syncer) changed(t Summary, full bool) bool {
	if s.owners != nil {
		if o := s.owners.Owner(t.ID); o != "" && o != store.SourceAmpServer {
			return s.othersBillDue(t, full) // its bill only (bills.go)
		}
	}
	now := listedAs(t)
	if was, ok := s.unreadable[t.ID]; ok {
		return t.V == 0 && full || was != now
	}
	rec, ok := s.store.File(store.AmpServerPath(t.ID))
	if !ok {
		return true
	}
	if full && (t.V == 0 || rec.Version.AmpServerWindow) {
		return true
	}
	return t.V != 0 && rec.Version.AmpServerV != int64(t.V) || rec.Version.AmpServerCount != int64(t.MessageCount) ||
		rec.Version.AmpServerLast != t.LastActivity()
}

// readWhole reports whether a changed thread is read whole, not by its
// window: at every full listing but the first since start-up, and at
// every full listing when it was last counted from a window.
func (s *Syncer) readWhole(t Summary, st *Stats) bool {
	if st.Whole {
		return true
	}
	if !st.Full {
		return false
	}
	rec, ok := s.store.File(store.AmpServerPath(t.ID))
	return ok && rec.Version.AmpServerWindow
}

// listing is how a listing shows a thread, to tell a change.
type listing struct {
	v, last int64
	count   int
}

func listedAs(t Summary) listing {
	return listing{v: int64(t.V), last: t.LastActivity(), count: t.MessageCount}
}
