package ampserver

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"sync"
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
	ServerPaths() []string
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
	ServerSynced()
}

// SyncConfig configures a Syncer.
type SyncConfig struct {
	Interval     time.Duration // between routine syncs
	FullInterval time.Duration // between full listings
	// AuthRetry is the wait after the key was refused (default 5m).
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
		source: opts.Source, streams: opts.Streams, log: opts.Logger, clock: opts.Clock, onAccount: opts.OnAccount,
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
	// Unreadable threads were fetched but cannot be counted (too large,
	// not understood): a parse error, read again when their `v` changes.
	Unreadable int
	Complete   bool
	StartedAt  time.Time
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
	s.rebill(ctx, rebill, &st)
	if newest != "" && s.entitlementDue(start) {
		s.entitlement(ctx, newest, start)
	}
	if st.Full && listErr == nil {
		// A full listing shows every thread there is: what it does not
		// list was deleted (or archived, without include_archived). Its
		// counts stay; it only leaves amp_threads.
		var missing []string
		for _, p := range s.store.ServerPaths() {
			if id := p[len(store.ServerPathPrefix):]; !listed[id] {
				missing = append(missing, id)
			}
		}
		gone, err := s.confirmGone(ctx, missing)
		if err != nil {
			// Those not confirmed stay present until the next full listing.
			s.log.Debug("cannot confirm threads missing from the full listing", "threads", len(missing), "err", err)
		}
		for _, id := range gone {
			s.store.Remove(store.ServerPath(id))
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
	if listErr == nil && st.Failed == 0 {
		st.Complete = true
		s.lastComplete = start
		if st.Full {
			s.lastFull = start
		}
		if s.streams != nil {
			s.streams.ServerSynced()
		}
	}
	return st, errors.Join(listErr, fetchErr)
}

// counted reports whether the server source counts the thread.
func (s *Syncer) counted(id string) bool {
	if s.owners != nil {
		if o := s.owners.Owner(id); o != "" && o != store.SourceServer {
			return false
		}
	}
	_, ok := s.store.File(store.ServerPath(id))
	return ok
}

// rebill reads the bills of unchanged threads again (SyncConfig.BillRecheck).
// A bill that cannot be read now is read at the next full listing; only a
// refused key stops the rest.
func (s *Syncer) rebill(ctx context.Context, ids []string, st *Stats) {
	for _, id := range ids {
		ci, err := s.client.ThreadDisplayCostInfo(ctx, id)
		switch {
		case err == nil:
			s.billed(id, ci)
			st.Rebilled++
		case errors.Is(err, ErrAuth) || ctx.Err() != nil:
			return
		default:
			s.noteBug(err)
			s.log.Debug("cannot read a thread's bill again", "err", err)
		}
	}
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
	if _, ok := s.store.File(store.ServerPath(id)); ok {
		s.store.Remove(store.ServerPath(id))
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
		if o := s.owners.Owner(t.ID); o != "" && o != store.SourceServer {
			return false
		}
	}
	now := listedAs(t)
	if was, ok := s.unreadable[t.ID]; ok {
		return t.V == 0 && full || was != now
	}
	rec, ok := s.store.File(store.ServerPath(t.ID))
	if !ok {
		return true
	}
	if full && (t.V == 0 || rec.Version.ServerWindow) {
		return true
	}
	return t.V != 0 && rec.Version.ServerV != int64(t.V) || rec.Version.ServerCount != int64(t.MessageCount) ||
		rec.Version.ServerLast != t.LastActivity()
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
	rec, ok := s.store.File(store.ServerPath(t.ID))
	return ok && rec.Version.ServerWindow
}

// listing is how a listing shows a thread, to tell a change.
type listing struct {
	v, last int64
	count   int
}

func listedAs(t Summary) listing {
	return listing{v: int64(t.V), last: t.LastActivity(), count: t.MessageCount}
}

func (s *Syncer) fetchAll(ctx context.Context, threads []Summary, st *Stats) error {
	if len(threads) == 0 {
		return nil
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	jobs := make(chan Summary)
	var mu sync.Mutex
	var firstErr error
	var wg sync.WaitGroup
	for range min(s.cfg.MaxConcurrency, len(threads)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			p := &parsers{whole: thread.NewParser(), part: thread.NewParser()}
			for t := range jobs {
				outcome, err := s.fetchOne(ctx, p, t, s.readWhole(t, st))
				mu.Lock()
				if outcome != outcomeUnreadable {
					delete(s.unreadable, t.ID)
				}
				switch {
				case outcome == outcomeCounted:
					st.Fetched++
				case outcome == outcomeGone:
					st.Gone++
				case outcome == outcomeSkipped:
					st.Skipped++
				case outcome == outcomeOtherUser:
					st.Skipped++
					s.skipOther(t.ID)
				case outcome == outcomeUnreadable:
					st.Unreadable++
					s.unreadable[t.ID] = listedAs(t)
				default:
					st.Failed++
					if firstErr == nil {
						firstErr = err
					}
					if errors.Is(err, ErrAuth) || errors.Is(err, ErrRateLimited) {
						// The rest waits for the next sync.
						cancel()
					}
				}
				mu.Unlock()
			}
		}()
	}
feed:
	for _, t := range threads {
		select {
		case jobs <- t:
		case <-ctx.Done():
			break feed
		}
	}
	close(jobs)
	wg.Wait()
	return firstErr
}

type outcome int

const (
	outcomeFailed outcome = iota
	outcomeCounted
	outcomeGone
	outcomeSkipped
	outcomeUnreadable
	outcomeOtherUser
)

// fetchOne reads a changed thread and counts it: its window when it has
// one (window.go), else, with whole, or when the window cannot be
// counted, the whole thread.
func (s *Syncer) fetchOne(ctx context.Context, p *parsers, t Summary, whole bool) (outcome, error) {
	if s.owners != nil {
		if o := s.owners.Owner(t.ID); o != "" && o != store.SourceServer {
			return outcomeSkipped, nil
		}
	}
	path := store.ServerPath(t.ID)
	if w, ok := s.window(path); ok && !whole {
		if t.MessageCount != 0 && t.MessageCount < w.Count {
			// Fewer messages than counted: truncated.
			s.windowed(true, true)
		} else if out, err, done := s.fetchWindow(ctx, p, t, w); done {
			return out, err
		}
	}
	ex, err := s.client.exportThread(ctx, t.ID, s.cfg.MaxThreadBytes, false)
	if out, err, done := s.exportFailed(path, t, err); done {
		return out, err
	}
	// Nothing counted keeps a byte of the messages: their buffers are
	// reused once the thread is counted.
	defer ex.Release()
	if s.otherUsers(ex.CreatorUserID) {
		return outcomeOtherUser, nil
	}
	began := s.clock.Now()
	parsed, err := ex.Parse(p.whole)
	if err != nil {
		s.parseFailed(thread.Reason(err), t.ID, err)
		return outcomeUnreadable, fmt.Errorf("thread from the server: %w", err)
	}
	sum := thread.Summarize(parsed)
	next := s.next(p, parsed, sum, ex, 1)
	return s.count(ctx, t, ex, sum, store.Window{}, next, began)
}

// exportFailed sorts out a failed read of a thread; done is false when
// there was no failure.
func (s *Syncer) exportFailed(path string, t Summary, err error) (outcome, error, bool) {
	switch {
	case err == nil:
		return 0, nil, false
	case errors.Is(err, ErrThreadNotFound):
		s.store.Remove(path)
		return outcomeGone, nil, true
	case errors.Is(err, ErrTooLarge):
		s.parseFailed(thread.ReasonTooLarge, t.ID, err)
		return outcomeUnreadable, err, true
	case errors.Is(err, ErrBadDocument):
		// The document is there and cannot be read: a parse error, read
		// again when its `v` changes.
		s.parseFailed("bad_response", t.ID, err)
		return outcomeUnreadable, err, true
	default:
		// Refused, rate limited, invalid, transient: nothing is known of
		// the document; it is fetched again at the next sync.
		s.noteBug(err)
		return outcomeFailed, err, true
	}
}

// count counts a thread read whole (w is zero) or as its window, with its
// bill, and keeps next as its next window.
func (s *Syncer) count(ctx context.Context, t Summary, ex Export, sum *thread.Summary, w store.Window, next *store.NextWindow, began time.Time) (outcome, error) {
	path := store.ServerPath(t.ID)
	if sum.ID != "" && sum.ID != t.ID {
		// The store counts a thread under its document's id; one that
		// names another thread than the one listed and claimed would be
		// counted under an id nobody claimed (a local thread's, say).
		err := &Error{Method: MethodGetThreadTail, kind: ErrBadDocument, detail: "the document names another thread"}
		s.parseFailed("bad_response", t.ID, err)
		return outcomeUnreadable, err
	}
	if sum.ID == "" {
		sum.ID = t.ID
	}
	// Claimed only once it can be counted: a thread the server lists but
	// the exporter cannot read stays with whichever source can.
	if s.owners != nil && !s.owners.Claim(t.ID, store.SourceServer) {
		return outcomeSkipped, nil
	}
	v := ex.V
	if v == 0 {
		v = int64(t.V)
	}
	if sum.AgentMode == "" {
		sum.AgentMode = t.AgentMode
	}
	// The bill is read before the thread is recorded at this version: a
	// thread recorded as current is not fetched again, so a bill that
	// failed after it would be lost until the thread changes.
	took := s.clock.Now().Sub(began) // the bill's round trip is not parsing
	var ci *CostInfo
	if s.cfg.Billed {
		c, err := s.client.ThreadDisplayCostInfo(ctx, t.ID)
		switch {
		case err == nil:
			ci = &c
		case errors.Is(err, ErrThreadNotFound):
			s.store.Remove(path)
			return outcomeGone, nil
		case errors.Is(err, ErrBadResponse) || errors.Is(err, ErrBadDocument) || errors.Is(err, ErrTooLarge) || errors.Is(err, ErrInvalidArgument):
			// Not worth a retry: the thread is counted without its bill.
			s.noteBug(err)
			s.log.Debug("no billed cost for a thread", "err", err)
		default:
			return outcomeFailed, fmt.Errorf("billed cost: %w", err)
		}
	}
	fv := store.FileVersion{Size: ex.Size, ServerV: v, ServerCount: int64(t.MessageCount), ServerLast: t.LastActivity(),
		ServerWindow: w.Start > 0}
	if ws, ok := s.store.(WindowStore); ok {
		if _, err := ws.ApplyWindow(path, fv, sum, w, next); err != nil {
			return outcomeFailed, err
		}
	} else {
		s.store.Apply(path, fv, sum)
	}
	if s.metrics != nil {
		s.metrics.Parsed(store.SourceServer, took)
	}
	if ci != nil {
		s.billed(t.ID, *ci)
	}
	return outcomeCounted, nil
}

func (s *Syncer) parseFailed(reason, id string, err error) {
	if s.metrics != nil {
		s.metrics.ParseFailed(store.SourceServer, reason)
	}
	s.log.Warn("cannot read a thread from the Amp server; its last good counts are kept", "reason", reason, "err", err)
	_ = id // thread ids are not logged at warn level
}

// billSplit is a thread's bill as one amount split by kind: the breakdown's
// kinds, and under "total" what totalCostUSD has beyond them (all of it
// when there is no breakdown).
func billSplit(ci CostInfo) map[string]float64 {
	usd := map[string]float64{}
	var split float64
	if b := ci.CostBreakdown; b != nil {
		for kind, v := range map[string]*float64{"free": b.FreeUSD, "paid": b.PaidUSD, "subscription": b.SubscriptionUSD} {
			if v != nil && *v > 0 && !math.IsInf(*v, 0) {
				usd[kind] = *v
				split += *v
			}
		}
	}
	if t := ci.TotalCostUSD; t != nil && *t-split > 1e-9 && !math.IsInf(*t, 0) {
		usd["total"] = *t - split
	}
	return usd
}

// entitlementDue reports whether the entitlement window should be asked
// for on its own: it comes with the bill of a changed thread, and an idle
// account has none (after a restart, or when the window resets).
func (s *Syncer) entitlementDue(now time.Time) bool {
	if !s.cfg.Billed || s.source == nil {
		return false
	}
	s.entMu.Lock()
	defer s.entMu.Unlock()
	return s.entAsked.IsZero() || now.Sub(s.entAsked) >= s.cfg.FullInterval ||
		(!s.entResets.IsZero() && !now.Before(s.entResets) && s.entAsked.Before(s.entResets))
}

// entitlement asks for the bill of the account's newest thread for the
// entitlement window it carries. The bill is applied as any other (a bill
// read again counts nothing more); a failure waits for the next sync that
// is due.
func (s *Syncer) entitlement(ctx context.Context, id string, now time.Time) {
	s.entMu.Lock()
	s.entAsked = now
	s.entMu.Unlock()
	ci, err := s.client.ThreadDisplayCostInfo(ctx, id)
	if err != nil {
		s.noteBug(err)
		s.log.Debug("cannot read the entitlement window", "err", err)
		return
	}
	s.billed(id, ci)
}

// billed records what Amp bills for the thread and the user's entitlement.
func (s *Syncer) billed(id string, ci CostInfo) {
	s.store.ApplyBilled(id, billSplit(ci))
	if ci.Entitlement != nil {
		s.entMu.Lock()
		s.entAsked = s.clock.Now()
		s.entResets = time.Time{}
		if r := ci.Entitlement.WindowResetsInSeconds; r != nil && *r >= 0 && *r < 1e9 {
			s.entResets = s.entAsked.Add(time.Duration(*r * float64(time.Second)))
		}
		s.entMu.Unlock()
	}
	if e := ci.Entitlement; e != nil && s.source != nil {
		ent := store.Entitlement{Window: e.WindowPeriod, LimitUSD: e.LimitUSD, RemainingUSD: e.RemainingUSD}
		if e.PercentUsed != nil {
			r := *e.PercentUsed / 100
			ent.UsedRatio = &r
		}
		if e.WindowResetsInSeconds != nil && *e.WindowResetsInSeconds >= 0 && *e.WindowResetsInSeconds < 1e9 {
			ent.ResetsAt = s.clock.Now().Add(time.Duration(*e.WindowResetsInSeconds * float64(time.Second)))
		}
		s.source.SetEntitlement(ent)
	}
}

// Run syncs every Interval until ctx ends. The first sync waits for start
// (closed when the local thread directories were first scanned, so a
// thread present as a local file is claimed by the file).
func (s *Syncer) Run(ctx context.Context, start <-chan struct{}) error {
	if start != nil {
		select {
		case <-start:
		case <-ctx.Done():
			return nil
		}
	}
	refused := false // the key was refused, and that was logged
	tooLong := false // a listing too long was logged
	for {
		wait := s.cfg.Interval
		st, err := s.Sync(ctx)
		if ctx.Err() != nil {
			return nil
		}
		if refused && !errors.Is(err, ErrAuth) {
			refused = false
			s.log.Info("the Amp server accepts the API key again")
		}
		switch {
		case errors.Is(err, ErrAuth):
			wait = max(s.cfg.AuthRetry, s.cfg.Interval)
			level := slog.LevelError // one line, not one per retry
			if refused {
				level = slog.LevelDebug
			}
			refused = true
			s.log.Log(ctx, level, "the Amp server refused the API key; retrying slowly (log in again, or set amp_server.enabled: false to stop)",
				"err", err, "retry_in", wait)
			s.up(false)
		case errors.Is(err, ErrListingTooLong):
			level := slog.LevelError // once, not once per sync
			if tooLong {
				level = slog.LevelDebug
			}
			tooLong = true
			s.log.Log(ctx, level, "the Amp server's thread listing does not end; each sync stops at its bound (what was listed is counted)",
				"err", err, "fetched", st.Fetched)
			s.up(false)
		case err != nil:
			s.log.Warn("sync with the Amp server incomplete; what was fetched is counted, the rest is retried",
				"err", err, "fetched", st.Fetched, "failed", st.Failed)
			s.up(false)
		default:
			tooLong = false
			s.up(true)
			if s.source != nil {
				s.source.Synced(s.clock.Now())
			}
			s.log.Debug("synced with the Amp server", "full", st.Full, "pages", st.Pages, "listed", st.Listed,
				"fetched", st.Fetched, "gone", st.Gone, "skipped", st.Skipped, "unreadable", st.Unreadable)
		}
		t := s.clock.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil
		case <-t.C():
		}
	}
}

func (s *Syncer) up(ok bool) {
	if s.source != nil {
		s.source.Up(ok)
	}
}
