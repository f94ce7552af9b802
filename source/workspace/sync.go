// Package workspace is the workspace source: it reads a whole Amp
// Enterprise workspace through Amp's workspace API (source/workspace/api)
// and counts it into a store.WorkspaceStore. Each sync reads the daily
// rollup (the history, and the rollup's own families), lists the threads,
// and fetches the usage of each main thread that changed since it was
// counted, oldest first (docs/workspace.md).
package workspace

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/amp-exporter/amp-exporter/internal/clock"
	"github.com/amp-exporter/amp-exporter/source/workspace/api"
	"github.com/amp-exporter/amp-exporter/store"
)

// Client is what the source asks of the API (api.Client).
type Client interface {
	ListThreads(ctx context.Context, q api.ListQuery) (api.ThreadPage, error)
	ThreadUsage(ctx context.Context, id string) (api.ThreadUsage, error)
	DailyUsage(ctx context.Context, endDate string, lookbackDays int) (api.DailyUsage, error)
}

// Defaults of Config.
const (
	// DefaultWindow is how long Amp serves a thread's usage.
	DefaultWindow = 90 * 24 * time.Hour
	// DefaultTrailingDays are the rollup's days read again at every sync:
	// today grows, and a closed day may be restated for a while.
	DefaultTrailingDays = 3
	// DefaultFullSweep is how often the listing is read without a filter
	// (threads listed without firstSyncedAt, which a filter may miss).
	DefaultFullSweep = 24 * time.Hour
	// MaxChunkDays is the most days one rollup request asks for.
	MaxChunkDays = 30
	// maxPages bounds one listing: a cursor that never ends stops there.
	maxPages = 100_000
)

// Config is how the source syncs.
type Config struct {
	Interval time.Duration
	// HistoryDays is how far back the rollup is read on the first run.
	HistoryDays int
	// TrailingDays are read again at every later sync.
	TrailingDays int
	// Window is how long the API serves a thread's usage.
	Window time.Duration
	// FullSweep is how often the listing is read without a filter.
	FullSweep time.Duration
	// PageSize is the listing's limit.
	PageSize int
}

func (c Config) withDefaults() Config {
	if c.Interval <= 0 {
		c.Interval = 5 * time.Minute
	}
	if c.HistoryDays <= 0 {
		c.HistoryDays = 365
	}
	if c.TrailingDays <= 0 {
		c.TrailingDays = DefaultTrailingDays
	}
	if c.Window <= 0 {
		c.Window = DefaultWindow
	}
	if c.FullSweep <= 0 {
		c.FullSweep = DefaultFullSweep
	}
	if c.PageSize <= 0 || c.PageSize > 100 {
		c.PageSize = 100
	}
	return c
}

// Hooks are told what a sync did; any may be nil.
type Hooks struct {
	// Skipped counts a listed thread that is not counted, once per thread
	// and reason.
	Skipped func(reason string)
	// Day is called with the dollars a member's day grew by per model
	// (the usage ledger's events).
	Day func(day, user, model string, usd float64)
	// Listed is called when a listing went over every page: from then on
	// the counters hold every thread's usage as far as it was read.
	Listed func()
	// Checkpoint is called every CheckpointEvery usage answers counted
	// within a sync (the state is saved then: a first sync of a large
	// workspace takes hours at the default budget, and a crash must not
	// lose all of it).
	Checkpoint func()
}

// CheckpointEvery is how many usage answers a sync counts between two
// checkpoints (about eight minutes at the default budget).
const CheckpointEvery = 1000

// Syncer reads the workspace into a store.
type Syncer struct {
	client Client
	store  *store.WorkspaceStore
	cfg    Config
	clock  clock.Clock
	log    *slog.Logger
	hooks  Hooks

	lastFull time.Time // the last full sweep of the listing
}

// NewSyncer returns a syncer; logger and clk may be nil.
func NewSyncer(c Client, st *store.WorkspaceStore, cfg Config, hooks Hooks, clk clock.Clock, logger *slog.Logger) *Syncer {
	if clk == nil {
		clk = clock.Real{}
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return &Syncer{client: c, store: st, cfg: cfg.withDefaults(), clock: clk, log: logger, hooks: hooks}
}

// Stats are what one sync did.
type Stats struct {
	Days, Pages, Listed, Fetched, Skipped int
	Full                                  bool
}

// Sync reads the rollup, lists the threads and counts the usage of those
// that changed. An error of one part does not stop the others; the
// first is returned, naming the endpoint. What was counted before an
// error stays counted: what was not is fetched at the next sync, and the
// high marks keep a figure fetched twice from counting twice.
func (s *Syncer) Sync(ctx context.Context) (Stats, error) {
	var st Stats
	now := s.clock.Now().UTC()
	errDaily := s.syncDaily(ctx, now, &st)
	if ctx.Err() != nil {
		return st, ctx.Err()
	}
	errThreads := s.syncThreads(ctx, now, &st)
	return st, errors.Join(errDaily, errThreads)
}

// syncDaily reads the rollup: on the first run history_days back, in
// chunks of at most MaxChunkDays; later from the last day read (at least
// the trailing days) to today.
func (s *Syncer) syncDaily(ctx context.Context, now time.Time, st *Stats) error {
	today := now.Truncate(24 * time.Hour)
	days := s.cfg.HistoryDays
	if last, ok := s.store.LastDay(); ok {
		behind := int(today.Sub(last)/(24*time.Hour)) + 1
		days = min(max(s.cfg.TrailingDays, behind+s.cfg.TrailingDays-1), s.cfg.HistoryDays)
	}
	first := today.AddDate(0, 0, -(days - 1))
	for end := today; !end.Before(first); end = end.AddDate(0, 0, -MaxChunkDays) {
		start := end.AddDate(0, 0, -(MaxChunkDays - 1))
		if start.Before(first) {
			start = first
		}
		n := int(end.Sub(start)/(24*time.Hour)) + 1
		du, err := s.client.DailyUsage(ctx, end.Format(time.DateOnly), n)
		if err != nil {
			return fmt.Errorf("daily-usage: %w", err)
		}
		s.applyDaily(du, start, end, st)
	}
	s.store.SetLastDay(today)
	// Days before the trailing window are settled: they are not read
	// again, and what they counted need not be kept.
	s.store.DropDaysBefore(today.AddDate(0, 0, -(s.cfg.TrailingDays - 1)).Format(time.DateOnly))
	return nil
}

// applyDaily counts the days of an answer within [start, end]: a window
// the API makes a day longer than asked must not count a settled day
// again.
func (s *Syncer) applyDaily(du api.DailyUsage, start, end time.Time, st *Stats) {
	lo, hi := start.Format(time.DateOnly), end.Format(time.DateOnly)
	for _, d := range du.Days {
		if d.Date < lo || d.Date > hi {
			continue
		}
		st.Days++
		for _, u := range d.Users {
			s.store.SetEmail(u.UserID, u.Email)
			for model, usd := range s.store.ApplyDay(DayOf(d.Date, u)) {
				if s.hooks.Day != nil {
					s.hooks.Day(d.Date, u.UserID, model, usd)
				}
			}
		}
	}
}

// DayOf is the store's view of a member's day of the rollup (the backfill
// counts the history with it as the source does).
func DayOf(date string, u api.UserDay) store.WorkspaceDay {
	wd := store.WorkspaceDay{Day: date, User: u.UserID, Added: u.LinesAdded, Deleted: u.LinesDeleted,
		Modified: u.LinesModified, Models: make(map[string]float64, len(u.Models)),
		Tokens: make(map[string][4]uint64, len(u.Models))}
	for _, m := range u.Models {
		wd.Models[m.Model] += m.USD
		t := wd.Tokens[m.Model]
		for i, n := range []uint64{m.InputTokens, m.OutputTokens, m.CacheReadInputTokens, m.CacheCreationInputTokens} {
			t[i] += n
		}
		wd.Tokens[m.Model] = t
	}
	return wd
}

// candidate is a main thread whose usage is to be fetched.
type candidate struct {
	id, user, repo string
	created        time.Time // the age the window counts from, at the earliest
	updated        time.Time
}

// syncThreads lists the threads (a full sweep without filter at the
// first sync and every FullSweep, otherwise those first synced within the
// window) and fetches the usage of each main thread that changed, the
// oldest first: those about to leave the window go before they do.
func (s *Syncer) syncThreads(ctx context.Context, now time.Time, st *Stats) error {
	q := api.ListQuery{Limit: s.cfg.PageSize}
	st.Full = s.lastFull.IsZero() || now.Sub(s.lastFull) >= s.cfg.FullSweep
	if !st.Full {
		q.After = now.Add(-s.cfg.Window)
	}
	subs := map[string]struct{}{}
	var todo []candidate
	seen := map[string]struct{}{}
	cursors := map[string]bool{}
	var listErr error
	for page := 0; ; page++ {
		if page == maxPages {
			listErr = fmt.Errorf("threads: the listing did not end after %d pages", maxPages)
			break
		}
		p, err := s.client.ListThreads(ctx, q)
		if err != nil {
			listErr = fmt.Errorf("threads: %w", err)
			break
		}
		st.Pages++
		for _, t := range p.Threads {
			for _, id := range t.SubThreadIDs {
				subs[id] = struct{}{}
			}
			if t.ID == "" {
				continue
			}
			if _, dup := seen[t.ID]; dup {
				continue // a page fetched twice
			}
			seen[t.ID] = struct{}{}
			st.Listed++
			if t.MainThreadID != "" || t.ParentThreadID != "" {
				subs[t.ID] = struct{}{}
				continue
			}
			c := candidate{id: t.ID, user: t.CreatorUserID, updated: t.UpdatedAt, created: earliest(t.CreatedAt, t.FirstSyncedAt)}
			if len(t.Repositories) > 0 {
				c.repo = t.Repositories[0]
			}
			todo = append(todo, c)
		}
		if p.NextCursor == "" {
			break
		}
		if cursors[p.NextCursor] {
			// A page already read: a server that ignores a cursor
			// parameter under another name serves the first page again.
			// Ending there would count the first pages only, silently.
			listErr = fmt.Errorf("threads: page %d names a next cursor already followed: the cursor parameter (listing_params.cursor) is not the one the API takes, or the listing goes round", page+1)
			break
		}
		cursors[p.NextCursor] = true
		q.Cursor = p.NextCursor
	}
	if listErr == nil {
		if st.Full {
			s.lastFull = now
		}
		if s.hooks.Listed != nil {
			s.hooks.Listed()
		}
	}
	// Oldest first, so that a thread about to leave the window is
	// counted before it does.
	slices.SortStableFunc(todo, func(a, b candidate) int {
		return cmp.Or(a.created.Compare(b.created), cmp.Compare(a.id, b.id))
	})
	var fetchErr error
	for _, c := range todo {
		if _, sub := subs[c.id]; sub {
			continue // named as another thread's sub-thread
		}
		if s.store.Counted(c.id, c.updated) {
			continue
		}
		last := latest(c.updated, c.created)
		if !last.IsZero() && now.Sub(last) > s.cfg.Window {
			// Past the window whatever its age counts from: asking
			// would only be answered 404.
			s.skip(c.id, store.WorkspaceSkipPastWindow, c.updated, st)
			continue
		}
		if ctx.Err() != nil {
			return errors.Join(listErr, ctx.Err())
		}
		u, err := s.client.ThreadUsage(ctx, c.id)
		switch {
		case errors.Is(err, api.ErrNotFound):
			reason := store.WorkspaceSkipNotFound
			if !c.created.IsZero() && now.Sub(c.created) > s.cfg.Window {
				reason = store.WorkspaceSkipPastWindow
			}
			s.skip(c.id, reason, c.updated, st)
			continue
		case err != nil:
			if fetchErr == nil {
				fetchErr = fmt.Errorf("usage: %w", err)
			}
			if ctx.Err() != nil {
				return errors.Join(listErr, fetchErr)
			}
			continue
		}
		st.Fetched++
		for _, id := range u.SubThreadIDs {
			subs[id] = struct{}{}
		}
		s.store.ApplyUsage(usageOf(c, u))
		if st.Fetched%CheckpointEvery == 0 && s.hooks.Checkpoint != nil {
			s.hooks.Checkpoint()
		}
	}
	for id := range subs {
		s.skip(id, store.WorkspaceSkipSubThread, time.Time{}, st)
	}
	return errors.Join(listErr, fetchErr)
}

// skip records a thread that is not counted, and counts it once.
func (s *Syncer) skip(id, reason string, updated time.Time, st *Stats) {
	if s.store.Skip(id, reason, updated) {
		st.Skipped++
		if s.hooks.Skipped != nil {
			s.hooks.Skipped(reason)
		}
	}
}

// usageOf is the store's view of a thread's usage answer.
func usageOf(c candidate, u api.ThreadUsage) store.WorkspaceUsage {
	w := store.WorkspaceUsage{ID: c.id, User: c.user, Repository: c.repo, Updated: c.updated, USD: u.USD,
		Models: make([]store.WorkspaceModel, 0, len(u.Models))}
	for _, m := range u.Models {
		t := [4]uint64{m.InputTokens, m.OutputTokens, m.CacheReadInputTokens, m.CacheCreationInputTokens}
		// A model listed twice (two providers) is one model's usage.
		i := slices.IndexFunc(w.Models, func(x store.WorkspaceModel) bool { return x.Model == m.Model })
		if i < 0 {
			w.Models = append(w.Models, store.WorkspaceModel{Model: m.Model})
			i = len(w.Models) - 1
		}
		for k := range t {
			w.Models[i].Tokens[k] += t[k]
		}
		w.Models[i].USD += m.USD
	}
	return w
}

func earliest(a, b time.Time) time.Time {
	if a.IsZero() || !b.IsZero() && b.Before(a) {
		return b
	}
	return a
}

func latest(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}
