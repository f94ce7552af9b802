package api

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/amp-exporter/amp-exporter/internal/clock"
	ws "github.com/amp-exporter/amp-exporter/internal/testsupport/workspacetest"
)

var start = time.Date(2026, 8, 12, 12, 0, 0, 0, time.UTC)

// fixture is a client of a stand-in, both on one fake clock.
type fixture struct {
	s   *ws.Server
	clk *clock.Fake
	c   *Client
	rec *recorder
}

func newFixture(t *testing.T, cfg ws.Config, opts ws.Options, mod func(*Options)) *fixture {
	t.Helper()
	s := ws.New(cfg, opts)
	t.Cleanup(s.Close)
	clk := clock.NewFake(start)
	s.SetClock(clk.Now)
	rec := newRecorder()
	o := Options{
		APIURL: s.URL, TokenURL: s.TokenURL(), ClientID: ws.ClientID, ClientSecret: ws.ClientSecret,
		Scopes: []string{ws.ScopeThreadsMeta, ws.ScopeThreadsContents, ws.ScopeAnalytics}, MaxRequestsPerMinute: 6000,
		Clock: clk, Hooks: rec.hooks(), Jitter: func() float64 { return 0.5 },
	}
	if mod != nil {
		mod(&o)
	}
	c, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	return &fixture{s: s, clk: clk, c: c, rec: rec}
}

// run runs f while moving the fake clock only to the timers the client
// sets (the budget's and the backoff's waits), so each request is made at
// the instant the client chose, however slowly the machine runs.
func (f *fixture) run(t *testing.T, fn func()) {
	t.Helper()
	done := make(chan struct{})
	go func() { defer close(done); fn() }()
	for {
		select {
		case <-done:
			return
		case <-time.After(time.Millisecond):
			f.clk.AdvanceToNext()
		}
	}
}

// sumWorkspace lists every thread and sums the usage of the main ones the
// way the source counts: sub-threads once, inside their parent.
func (f *fixture) sumWorkspace(t *testing.T) (map[ws.UserModel]ws.Usage, int) {
	t.Helper()
	var rows []Thread
	subs := map[string]bool{}
	f.run(t, func() {
		if err := f.c.ListAll(context.Background(), ListQuery{Limit: 100}, func(p ThreadPage) error {
			for _, th := range p.Threads {
				rows = append(rows, th)
				for _, id := range th.SubThreadIDs {
					subs[id] = true
				}
			}
			return nil
		}); err != nil {
			t.Error(err)
		}
	})
	got := map[ws.UserModel]ws.Usage{}
	notFound := 0
	for _, th := range rows {
		if th.MainThreadID != "" || subs[th.ID] {
			continue
		}
		var u ThreadUsage
		var err error
		f.run(t, func() { u, err = f.c.ThreadUsage(context.Background(), th.ID) })
		if errors.Is(err, ErrNotFound) {
			notFound++
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range u.Models {
			k := ws.UserModel{User: th.CreatorUserID, Model: m.Model}
			v := got[k]
			v.Add(ws.Usage{Requests: int64(m.Requests), InputTokens: int64(m.InputTokens), OutputTokens: int64(m.OutputTokens),
				CacheReadInputTokens: int64(m.CacheReadInputTokens), CacheCreationInputTokens: int64(m.CacheCreationInputTokens),
				Units: int64(m.USD * ws.UnitsPerUSD)})
			got[k] = v
		}
	}
	return got, notFound
}

func TestClientAddsUpToTheTruth(t *testing.T) {
	for _, tc := range []struct {
		name  string
		auth  string
		shape ws.Options
	}{
		{"basic", AuthBasic, ws.Options{ClientAuth: ws.AuthBasic}},
		{"post", AuthPost, ws.Options{ClientAuth: ws.AuthPost}},
		{"null items, extra fields, ids as strings", AuthBasic, ws.Options{NullItems: true, ExtraFields: true, SubThreadsAsIDs: true, RepositoriesAsStrings: true}},
		{"optional fields null", AuthBasic, ws.Options{NullOptional: true}},
		{"optional fields left out", AuthBasic, ws.Options{OmitOptional: true, SubThreads: ws.SubThreadsRowsOnly}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, ws.Config{Users: 6, Threads: 150, Days: 120}, tc.shape, func(o *Options) { o.ClientAuth = tc.auth })
			got, notFound := f.sumWorkspace(t)
			want := f.s.ThreadTotals(true)
			if len(got) != len(want.ByUserModel) || notFound == 0 {
				t.Fatalf("%d user/model pairs, want %d; %d threads past the window", len(got), len(want.ByUserModel), notFound)
			}
			for k, w := range want.ByUserModel {
				if got[k] != w {
					t.Errorf("%v: %+v, want %+v", k, got[k], w)
				}
			}
			var du DailyUsage
			var err error
			f.run(t, func() { du, err = f.c.DailyUsage(context.Background(), f.s.Today(), 365) })
			if err != nil {
				t.Fatal(err)
			}
			roll := f.s.Rollup()
			n := 0
			for _, d := range du.Days {
				for _, u := range d.Users {
					ud := roll.UserDay[ws.DayUser{Day: d.Date, User: u.UserID}]
					if int64(u.USD*ws.UnitsPerUSD) != ud.Units || int64(u.LinesAdded) != ud.LinesAdded || int64(u.LinesDeleted) != ud.LinesDeleted {
						t.Errorf("%s %s: %+v, want %+v", d.Date, u.UserID, u, ud)
					}
					for _, m := range u.Models {
						n++
						w := roll.ByDay[ws.DayUserModel{Day: d.Date, User: u.UserID, Model: m.Model}]
						if int64(m.USD*ws.UnitsPerUSD) != w.Units || int64(m.InputTokens) != w.InputTokens || int64(m.CacheReadInputTokens) != w.CacheReadInputTokens {
							t.Errorf("%s %s %s: %+v, want %+v", d.Date, u.UserID, m.Model, m, w)
						}
					}
				}
			}
			if n != len(roll.ByDay) {
				t.Errorf("%d rollup entries, want %d", n, len(roll.ByDay))
			}
			if f.s.NonGET() != 0 {
				t.Errorf("%d requests other than GET reached /api/v2/", f.s.NonGET())
			}
			if f.s.TokenRequests() != 1 {
				t.Errorf("%d tokens fetched, want 1", f.s.TokenRequests())
			}
		})
	}
}
