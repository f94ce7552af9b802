package workspace

import (
	"context"
	"encoding/json"
	"math"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/amp-exporter/amp-exporter/internal/clock"
	ws "github.com/amp-exporter/amp-exporter/internal/testsupport/workspacetest"
	"github.com/amp-exporter/amp-exporter/ledger"
	"github.com/amp-exporter/amp-exporter/parser/gitremote"
	"github.com/amp-exporter/amp-exporter/source/workspace/api"
	"github.com/amp-exporter/amp-exporter/store"
)

var start = time.Date(2026, 8, 12, 12, 0, 0, 0, time.UTC)

// fixture is a syncer on a stand-in, both on one fake clock.
type fixture struct {
	s      *ws.Server
	clk    *clock.Fake
	c      *api.Client
	store  *store.WorkspaceStore
	syncer *Syncer
	cfg    Config
	client Client // what the syncer asks (c, or a wrapper of it)
}

func newFixture(t testing.TB, cfg ws.Config, opts ws.Options) *fixture {
	t.Helper()
	return newFixtureBudget(t, cfg, opts, 6000)
}

// newFixtureBudget is newFixture with a request budget of perMinute.
func newFixtureBudget(t testing.TB, cfg ws.Config, opts ws.Options, perMinute int) *fixture {
	t.Helper()
	s := ws.New(cfg, opts)
	t.Cleanup(s.Close)
	clk := clock.NewFake(start)
	s.SetClock(clk.Now)
	c, err := api.New(api.Options{
		APIURL: s.URL, TokenURL: s.TokenURL(), ClientID: ws.ClientID, ClientSecret: ws.ClientSecret,
		Scopes:               []string{ws.ScopeThreadsMeta, ws.ScopeThreadsContents, ws.ScopeAnalytics},
		MaxRequestsPerMinute: perMinute, Clock: clk, Jitter: func() float64 { return 0.5 },
		Params: api.ListingParams{Cursor: "cursor", After: "after", Before: "before", Sort: "sort"},
	})
	if err != nil {
		t.Fatal(err)
	}
	f := &fixture{s: s, clk: clk, c: c, client: c, cfg: Config{HistoryDays: 365}}
	f.restart(nil)
	return f
}

// restart makes a new store and syncer, the store restored from st when
// it is not nil (an exporter restarted with --storage.path).
func (f *fixture) restart(st *store.WorkspaceState) {
	f.store = store.NewWorkspaceStore(nil, store.NewRepositories(nil))
	if st != nil {
		f.store.Import(*st)
	}
	f.syncer = NewSyncer(f.client, f.store, f.cfg, Hooks{}, f.clk, nil)
}

// sync runs one sync, moving the fake clock only to the timers the
// client sets (its budget's and backoff's waits).
func (f *fixture) sync(t testing.TB) (Stats, error) {
	t.Helper()
	var st Stats
	var err error
	done := make(chan struct{})
	go func() { defer close(done); st, err = f.syncer.Sync(context.Background()) }()
	for {
		select {
		case <-done:
			return st, err
		case <-time.After(time.Millisecond):
			f.clk.AdvanceToNext()
		}
	}
}

func (f *fixture) mustSync(t testing.TB) Stats {
	t.Helper()
	st, err := f.sync(t)
	if err != nil {
		t.Fatalf("sync: %v", err)
	}
	return st
}

// saved is the store's state through JSON, as a restart reads it.
func (f *fixture) saved(t testing.TB) *store.WorkspaceState {
	t.Helper()
	b, err := json.Marshal(f.store.Export())
	if err != nil {
		t.Fatal(err)
	}
	var st store.WorkspaceState
	if err := json.Unmarshal(b, &st); err != nil {
		t.Fatal(err)
	}
	return &st
}

// checkTruth compares the counters with the stand-in's truth exactly:
// per user and model the tokens by type and the dollars, per repository
// the dollars, the threads' own dollars in total; and the rollup's
// families with the rollup.
func checkTruth(t *testing.T, f *fixture) {
	t.Helper()
	checkTruthRepos(t, f, true)
}

// checkTruthRepos is checkTruth, the per-repository dollars only when
// the listing shows repositories.
func checkTruthRepos(t *testing.T, f *fixture, repos bool) {
	t.Helper()
	truth := f.s.ThreadTotals(true)
	snap := f.store.Snapshot()
	got := map[ws.UserModel]ws.Usage{}
	for k, v := range snap.Tokens {
		u := got[ws.UserModel{User: k.User, Model: k.L1}]
		switch k.L2 {
		case "input":
			u.InputTokens += int64(v)
		case "output":
			u.OutputTokens += int64(v)
		case "cache_read":
			u.CacheReadInputTokens += int64(v)
		case "cache_creation":
			u.CacheCreationInputTokens += int64(v)
		}
		got[ws.UserModel{User: k.User, Model: k.L1}] = u
	}
	usd := map[ws.UserModel]float64{}
	byRepo := map[string]float64{}
	var billed float64
	for k, v := range snap.Cost {
		usd[ws.UserModel{User: k.User, Model: k.L1}] += v
		byRepo[k.Repo] += v
	}
	for _, v := range snap.Billed {
		billed += v
	}
	if len(got) != len(truth.ByUserModel) {
		t.Errorf("%d user/model pairs, the truth has %d", len(got), len(truth.ByUserModel))
	}
	for k, want := range truth.ByUserModel {
		g := got[k]
		g.Requests, g.Units = want.Requests, want.Units
		if g != want {
			t.Errorf("%v: tokens %+v, want %+v", k, g, want)
		}
		if usd[k] != want.USD() {
			t.Errorf("%v: %v USD, want %v", k, usd[k], want.USD())
		}
	}
	wantRepo := map[string]float64{}
	for raw, u := range truth.ByRepository {
		norm, _ := gitremote.Normalize(raw)
		wantRepo[norm] += u.USD()
	}
	for r, want := range wantRepo {
		if repos && byRepo[r] != want {
			t.Errorf("repository %q: %v USD, want %v", r, byRepo[r], want)
		}
	}
	if billed != truth.Total.USD() {
		t.Errorf("threads' dollars %v, want %v", billed, truth.Total.USD())
	}
	ro := f.s.Rollup()
	wantDaily := map[store.WSKey]float64{}
	wantLines := map[store.WSKey]uint64{}
	for k, u := range ro.ByDay {
		wantDaily[store.WSKey{L1: k.Model, User: k.User}] += u.USD()
	}
	for k, d := range ro.UserDay {
		wantLines[store.WSKey{L1: "added", User: k.User}] += uint64(d.LinesAdded)
		wantLines[store.WSKey{L1: "deleted", User: k.User}] += uint64(d.LinesDeleted)
		wantLines[store.WSKey{L1: "modified", User: k.User}] += uint64(d.LinesModified)
	}
	for k, want := range wantDaily {
		if snap.DailyUSD[k] != want {
			t.Errorf("rollup %v: %v USD, want %v", k, snap.DailyUSD[k], want)
		}
	}
	if len(snap.DailyUSD) != len(wantDaily) {
		t.Errorf("%d rollup series, want %d", len(snap.DailyUSD), len(wantDaily))
	}
	// The usage ledger: per day, user and model, the rollup's tokens
	// exactly and its dollars to the ledger's 1e-10.
	led := map[ws.DayUserModel]ledger.Usage{}
	for _, e := range f.store.Ledger() {
		k := ws.DayUserModel{Day: time.UnixMilli(e.Start).UTC().Format(time.DateOnly), User: strings.TrimPrefix(e.Session, store.WorkspaceLedgerSession), Model: e.Model}
		v := led[k]
		v.Add(e.Usage)
		led[k] = v
	}
	if len(led) != len(ro.ByDay) {
		t.Errorf("%d ledger rows, the rollup has %d", len(led), len(ro.ByDay))
	}
	for k, u := range ro.ByDay {
		g := led[k]
		if g.Input != u.InputTokens || g.Output != u.OutputTokens || g.CacheRead != u.CacheReadInputTokens || g.CacheCreation != u.CacheCreationInputTokens {
			t.Errorf("ledger %v: %+v, the rollup %+v", k, g, u)
		}
		if d := math.Abs(float64(g.Cost)/1e10 - u.USD()); d > 1e-10 {
			t.Errorf("ledger %v: %v USD, the rollup %v", k, float64(g.Cost)/1e10, u.USD())
		}
	}
	for k, want := range wantLines {
		if want != 0 && snap.Lines[k] != want {
			t.Errorf("lines %v: %v, want %v", k, snap.Lines[k], want)
		}
	}
}

var small = ws.Config{Users: 8, Threads: 240, Days: 120}

// TestSyncAddsUpToTheTruth: one sync of the stand-in, in each shape,
// counts its truth exactly; sub-threads once, whether they are rows,
// nested, or both; the usage of main threads only.
func TestSyncAddsUpToTheTruth(t *testing.T) {
	for _, tc := range []struct {
		name    string
		cfg     ws.Config
		opts    ws.Options
		noRepos bool // the listing has no repositories
	}{
		{"default", small, ws.Options{}, false},
		{"sub-threads as rows only", small, ws.Options{SubThreads: ws.SubThreadsRowsOnly}, false},
		{"sub-threads nested only", small, ws.Options{SubThreads: ws.SubThreadsNestedOnly}, false},
		{"sub-threads as ids, parentThreadID", small, ws.Options{SubThreadsAsIDs: true, ParentThreadID: true}, false},
		{"null items and unknown fields", small, ws.Options{NullItems: true, ExtraFields: true}, false},
		{"optional fields null", small, ws.Options{NullOptional: true}, true},
		{"optional fields left out", small, ws.Options{OmitOptional: true}, true},
		{"repositories as strings", small, ws.Options{RepositoriesAsStrings: true}, false},
		{"a sub-thread's usage is its parent's", small, ws.Options{SubThreadUsage: ws.SubUsageParent}, false},
		{"age from last activity", small, ws.Options{RetentionFrom: ws.AgeFromLastActivity}, false},
		{"window one day longer", small, ws.Options{WindowOneDayLonger: true}, false},
		{"sub-threads by others", ws.Config{Users: 8, Threads: 240, Days: 120, SubThreadsByOthers: true}, ws.Options{}, false},
		{"the issue's workspace", ws.Config{}, ws.Options{}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, tc.cfg, tc.opts)
			st := f.mustSync(t)
			checkTruthRepos(t, f, !tc.noRepos)
			if n := f.s.NonGET(); n != 0 {
				t.Errorf("%d requests other than GET", n)
			}
			if st.Fetched == 0 {
				t.Error("nothing fetched")
			}
		})
	}
}

// TestSyncNothingChanged: a second sync fetches no usage, and counts
// nothing more.
func TestSyncNothingChanged(t *testing.T) {
	f := newFixture(t, small, ws.Options{})
	f.mustSync(t)
	before := f.store.Snapshot()
	f.s.ResetRequests()
	f.clk.Advance(5 * time.Minute)
	f.mustSync(t)
	if n := f.s.Count(ws.RouteUsage); n != 0 {
		t.Errorf("%d usage requests for an unchanged workspace", n)
	}
	if got := f.store.Snapshot(); !equalSnap(got, before) {
		t.Errorf("counters moved: %+v, were %+v", got, before)
	}
}

func equalSnap(a, b store.WorkspaceSnapshot) bool { return reflect.DeepEqual(a, b) }

// TestSyncRestart: restarted from its state, the source fetches no usage
// from the same workspace and its counters are unchanged; then one step
// of growth is counted exactly, from the threads that grew.
func TestSyncRestart(t *testing.T) {
	f := newFixture(t, small, ws.Options{})
	f.mustSync(t)
	before := f.store.Snapshot()
	f.restart(f.saved(t))
	f.s.ResetRequests()
	f.mustSync(t)
	if n := f.s.Count(ws.RouteUsage); n != 0 {
		t.Errorf("%d usage requests after a restart with nothing changed, want 0", n)
	}
	if got := f.store.Snapshot(); !equalSnap(got, before) {
		t.Errorf("counters after restart %+v, were %+v", got, before)
	}
	f.s.Grow()
	f.s.ResetRequests()
	f.restart(f.saved(t))
	f.mustSync(t)
	if got, want := f.s.Count(ws.RouteUsage), len(f.s.TodayThreads()); got != want {
		t.Errorf("%d usage requests after growth, want %d (the threads that grew)", got, want)
	}
	checkTruth(t, f)
}

// TestSyncTodayGrowing: today's figures grow while a sync runs and
// between syncs; each sync ends at the truth of the moment it read.
func TestSyncTodayGrowing(t *testing.T) {
	f := newFixture(t, small, ws.Options{})
	f.mustSync(t)
	for range 3 {
		f.s.Grow()
		f.clk.Advance(5 * time.Minute)
		f.mustSync(t)
		checkTruth(t, f)
	}
	if r := f.store.Snapshot().Restatements; r[store.WorkspaceEndpointUsage] != 0 || r[store.WorkspaceEndpointDaily] != 0 {
		t.Errorf("restatements %v for figures that only grew", r)
	}
}

// TestSyncClosedDayRestated: a closed day of the rollup restated up is
// counted as growth; restated down, as a restatement, not subtracted.
func TestSyncClosedDayRestated(t *testing.T) {
	f := newFixture(t, small, ws.Options{})
	f.mustSync(t)
	yesterday := start.AddDate(0, 0, -1).Format(time.DateOnly)
	user := f.s.RollupUserID(0)
	var member string
	for k := range f.s.Rollup().UserDay {
		if k.Day == yesterday {
			member = k.User
			break
		}
	}
	if member == "" {
		t.Fatalf("no member active yesterday (%s); user 0 is %s", yesterday, user)
	}
	f.s.Restate(yesterday, member, 1<<20) // 1/16 USD
	f.clk.Advance(5 * time.Minute)
	f.mustSync(t)
	checkTruth(t, f)
	before := f.store.Snapshot()
	f.s.Restate(yesterday, member, -1<<21)
	f.clk.Advance(5 * time.Minute)
	f.mustSync(t)
	after := f.store.Snapshot()
	if after.Restatements[store.WorkspaceEndpointDaily] != 1 {
		t.Errorf("restatements %v, want one of the rollup", after.Restatements)
	}
	for k, v := range before.DailyUSD {
		if after.DailyUSD[k] != v {
			t.Errorf("%v moved from %v to %v on a restatement down", k, v, after.DailyUSD[k])
		}
	}
}

// pageTwice is a client whose listing serves each page's rows again on
// the next page (a page fetched twice, as a retried request may).
type pageTwice struct {
	Client
	last []api.Thread
}

func (p *pageTwice) ListThreads(ctx context.Context, q api.ListQuery) (api.ThreadPage, error) {
	pg, err := p.Client.ListThreads(ctx, q)
	if err != nil {
		return pg, err
	}
	rows := pg.Threads
	pg.Threads = append(append([]api.Thread(nil), p.last...), rows...)
	p.last = rows
	return pg, nil
}

// TestSyncPageTwice: rows served twice are fetched and counted once.
func TestSyncPageTwice(t *testing.T) {
	f := newFixture(t, small, ws.Options{})
	f.client = &pageTwice{Client: f.c}
	f.restart(nil)
	f.mustSync(t)
	checkTruth(t, f)
	asked := map[string]int{}
	for _, r := range f.s.Requests() {
		if r.Route == ws.RouteUsage {
			asked[r.Path]++
		}
	}
	for p, n := range asked {
		if n > 1 {
			t.Errorf("%s asked %d times", p, n)
		}
	}
	if got, want := len(asked), f.s.ThreadTotals(true).MainThreads; got < want {
		t.Errorf("%d threads' usage asked, want at least %d (every main thread served)", got, want)
	}
}

// TestSyncFaults: 429s and 5xx in the middle of a sync are waited out
// (nothing lost, nothing doubled); a fault that outlasts the client's
// attempts fails the sync naming the endpoint, and the next sync ends at
// the truth.
func TestSyncFaults(t *testing.T) {
	for _, tc := range []struct {
		name    string
		route   ws.Route
		faults  []ws.Fault
		failing bool
	}{
		{"429 with Retry-After in seconds", ws.RouteUsage, []ws.Fault{{Status: 429, RetryAfter: "2"}}, false},
		{"429 with an HTTP date", ws.RouteUsage, []ws.Fault{{Status: 429, RetryAfter: ws.RetryAfterDate(start.Add(time.Minute))}}, false},
		{"429 without Retry-After", ws.RouteThreads, []ws.Fault{{Status: 429}}, false},
		{"503 twice", ws.RouteDaily, []ws.Fault{{Status: 503}, {Status: 503}}, false},
		{"500 on any (the token's first, asked again by the client)", ws.RouteAny, []ws.Fault{{Status: 500}}, false},
		{"usage failing longer than the client tries", ws.RouteUsage, repeat(ws.Fault{Status: 503}, 6), true},
		{"listing failing longer than the client tries", ws.RouteThreads, repeat(ws.Fault{Status: 502}, 6), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, small, ws.Options{})
			f.s.Fail(tc.route, tc.faults...)
			_, err := f.sync(t)
			if tc.failing {
				if err == nil {
					t.Fatal("no error")
				}
				f.clk.Advance(5 * time.Minute)
				f.mustSync(t)
			} else if err != nil {
				t.Fatalf("sync: %v", err)
			}
			checkTruth(t, f)
		})
	}
}

func repeat(f ws.Fault, n int) []ws.Fault {
	out := make([]ws.Fault, n)
	for i := range out {
		out[i] = f
	}
	return out
}

// TestSyncSkipped: each sub-thread and each thread past the window is
// skipped once, with its reason, and not asked for again after a
// restart's full sweep.
func TestSyncSkipped(t *testing.T) {
	f := newFixture(t, small, ws.Options{})
	skipped := map[string]int{}
	f.syncer.hooks.Skipped = func(r string) { skipped[r]++ }
	f.mustSync(t)
	all, served := f.s.ThreadTotals(false), f.s.ThreadTotals(true)
	want := map[string]int{store.WorkspaceSkipSubThread: all.SubThreads, store.WorkspaceSkipPastWindow: all.MainThreads - served.MainThreads}
	if want[store.WorkspaceSkipPastWindow] == 0 {
		t.Fatal("no thread past the window in the fixture")
	}
	if !reflect.DeepEqual(skipped, want) {
		t.Errorf("skipped %v, want %v", skipped, want)
	}
	f.restart(f.saved(t))
	clear(skipped)
	f.syncer.hooks.Skipped = func(r string) { skipped[r]++ }
	f.s.ResetRequests()
	if st := f.mustSync(t); !st.Full {
		t.Error("the first sync after a restart is not a full sweep")
	}
	if n := f.s.Count(ws.RouteUsage); n != 0 {
		t.Errorf("%d usage requests in a full sweep of an unchanged workspace", n)
	}
	if len(skipped) != 0 {
		t.Errorf("skipped again after restart: %v", skipped)
	}
}

// TestSyncCheckpoints: a long first sync hands out a checkpoint every
// CheckpointEvery usage answers, and says when the listing is complete.
func TestSyncCheckpoints(t *testing.T) {
	f := newFixture(t, ws.Config{}, ws.Options{})
	checkpoints, listed := 0, 0
	f.syncer.hooks.Checkpoint = func() { checkpoints++ }
	f.syncer.hooks.Listed = func() { listed++ }
	st := f.mustSync(t)
	if want := st.Fetched / CheckpointEvery; want == 0 || checkpoints != want {
		t.Errorf("%d checkpoints for %d usage answers, want %d", checkpoints, st.Fetched, want)
	}
	if listed != 1 {
		t.Errorf("listed %d times, want 1", listed)
	}
}

// TestSyncCursorGoingRound: a listing whose next page is one already
// read (a server that ignores a misnamed cursor parameter serves the
// first page again) is an error naming the listing and the cursor, not
// a listing that ends there with the threads of later pages left out.
func TestSyncCursorGoingRound(t *testing.T) {
	f := newFixture(t, small, ws.Options{})
	c, err := api.New(api.Options{
		APIURL: f.s.URL, TokenURL: f.s.TokenURL(), ClientID: ws.ClientID, ClientSecret: ws.ClientSecret,
		Scopes:               []string{ws.ScopeThreadsMeta, ws.ScopeThreadsContents, ws.ScopeAnalytics},
		MaxRequestsPerMinute: 6000, Clock: f.clk, Jitter: func() float64 { return 0.5 },
		Params: api.ListingParams{Cursor: "page", After: "after", Before: "before", Sort: "sort"},
	})
	if err != nil {
		t.Fatal(err)
	}
	f.c, f.client = c, c
	listed := false
	f.syncer = NewSyncer(f.client, f.store, f.cfg, Hooks{Listed: func() { listed = true }}, f.clk, nil)
	_, err = f.sync(t)
	if err == nil || !strings.Contains(err.Error(), "threads:") || !strings.Contains(err.Error(), "cursor") {
		t.Fatalf("sync: %v, want an error naming the listing and its cursor", err)
	}
	if listed {
		t.Error("the listing was taken as complete")
	}
	if n := f.s.Count(ws.RouteThreads); n != 2 {
		t.Errorf("%d listing requests, want the first page and the one that repeated it", n)
	}
}
