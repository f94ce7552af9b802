package workspacetest

import (
	"math"
	"net/http"
	"net/url"
	"testing"
	"time"
)

// withSubs finds a main thread with sub-threads whose usage is served.
func withSubs(t *testing.T, s *Server) int {
	t.Helper()
	for i := s.Config().Threads - 1; i >= 0; i-- {
		if s.ws.thread(i, 0).subs > 0 {
			return i
		}
	}
	t.Fatal("no thread with sub-threads")
	return 0
}

// TestUsageWindow: which threads answer 404 depends on what the 90 days
// count from, the status and body past the window are switches, and an
// unknown id is 404.
func TestUsageWindow(t *testing.T) {
	s := New(Config{Seed: 11, Users: 4, Threads: 400, Days: 100}, Options{})
	defer s.Close()
	c := newClient(t, s)
	now := s.Config().Now
	for _, tc := range []struct {
		name string
		opts Options
		age  func(th thread) time.Time
	}{
		{"from createdAt", Options{}, func(th thread) time.Time { return th.created }},
		{"from firstSyncedAt", Options{RetentionFrom: AgeFromFirstSynced}, func(th thread) time.Time { return th.firstSynced }},
		{"from last activity", Options{RetentionFrom: AgeFromLastActivity}, func(th thread) time.Time { return th.last }},
		{"30 days", Options{RetentionDays: 30}, func(th thread) time.Time { return th.created.Add(-60 * 24 * time.Hour) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s.SetOptions(tc.opts)
			past := 0
			for i := 0; i < 400; i += 3 {
				status, _, _ := c.get("/api/v2/threads/"+s.ThreadID(i, 0)+"/usage", nil)
				want := http.StatusOK
				if now.Sub(tc.age(s.ws.thread(i, 0))) > 90*24*time.Hour {
					want = http.StatusNotFound
					past++
				}
				if status != want {
					t.Fatalf("thread %d: %d, want %d", i, status, want)
				}
			}
			if past == 0 {
				t.Errorf("no thread past the window")
			}
		})
	}
	s.SetOptions(Options{PastWindowStatus: http.StatusGone, PastWindowError: "usage is kept for 90 days"})
	status, _, b := c.get("/api/v2/threads/"+s.ThreadID(0, 0)+"/usage", nil)
	if status != http.StatusGone || string(b) != `{"error":"usage is kept for 90 days"}` {
		t.Errorf("past the window: %d %s", status, b)
	}
	for _, id := range []string{"T-00000000-0000-4000-8000-000000000000", "nope", s.ThreadID(400, 0), New(Config{Seed: 12, Users: 1, Threads: 400, Days: 100}, Options{}).ThreadID(399, 0)} {
		if status, _, b := c.get("/api/v2/threads/"+url.PathEscape(id)+"/usage", nil); status != http.StatusNotFound || string(b) != `{"error":"thread not found"}` {
			t.Errorf("unknown %s: %d %s", id, status, b)
		}
	}
}

// TestUsageShapes: a main thread's usage rolls its sub-threads in and
// names them; a sub-thread's own request answers as SubThreadUsage says;
// the list-price estimate sits where ListPrice puts it; null items and
// left-out fields as switched.
func TestUsageShapes(t *testing.T) {
	s := New(Config{Seed: 11, Users: 4, Threads: 400, Days: 100, BYOKEvery: 2}, Options{})
	defer s.Close()
	c := newClient(t, s)
	i := withSubs(t, s)
	main, sub := s.ThreadID(i, 0), s.ThreadID(i, 1)
	get := func(id string) (int, map[string]any) {
		status, _, _ := c.get("/api/v2/threads/"+id+"/usage", nil)
		if status != http.StatusOK {
			return status, nil
		}
		return status, c.object("/api/v2/threads/"+id+"/usage", nil)
	}
	sum := func(m map[string]any) (u Usage) {
		for _, x := range m["models"].([]any) {
			if x != nil {
				u.Add(modelUsage(x.(map[string]any)))
			}
		}
		return u
	}
	_, whole := get(main)
	if ids := whole["subThreadIDs"].([]any); len(ids) == 0 || ids[0] != sub {
		t.Fatalf("subThreadIDs %v", whole["subThreadIDs"])
	}
	_, own := get(sub)
	if u, w := sum(own), sum(whole); u.TotalTokens() == 0 || u.TotalTokens() >= w.TotalTokens() {
		t.Errorf("sub-thread's own %d tokens, its parent's %d", u.TotalTokens(), w.TotalTokens())
	}
	if len(own["subThreadIDs"].([]any)) != 0 {
		t.Errorf("a sub-thread names sub-threads")
	}
	s.SetOptions(Options{SubThreadUsage: SubUsageParent})
	if _, m := get(sub); sum(m) != sum(whole) {
		t.Errorf("SubUsageParent: %v", m)
	}
	s.SetOptions(Options{SubThreadUsage: SubUsageNotFound})
	if status, _ := get(sub); status != http.StatusNotFound {
		t.Errorf("SubUsageNotFound: %d", status)
	}
	for _, tc := range []struct {
		p              ListPricePlacement
		thread, models bool
	}{{ListPriceNone, false, false}, {ListPriceOnThread, true, false}, {ListPriceOnModels, false, true}, {ListPriceEverywhere, true, true}} {
		s.SetOptions(Options{ListPrice: tc.p})
		_, m := get(main)
		_, onThread := m["estimatedProviderCostAtListPriceUSD"]
		_, onModel := m["models"].([]any)[0].(map[string]any)["estimatedProviderCostAtListPriceUSD"]
		if onThread != tc.thread || onModel != tc.models {
			t.Errorf("placement %d: on the thread %t, on models %t", tc.p, onThread, onModel)
		}
	}
	// BYOKEvery 2: thread 0 (past the window) and every even one are on
	// the workspace's keys: tokens, no dollars, an estimate.
	s.SetOptions(Options{ListPrice: ListPriceOnThread})
	for _, j := range []int{398, 399} {
		_, m := get(s.ThreadID(j, 0))
		u := sum(m)
		est := units(m["estimatedProviderCostAtListPriceUSD"])
		if byok := j%2 == 0; byok != (u.Units == 0) || est == 0 || (!byok && est != u.Units) || u.TotalTokens() == 0 {
			t.Errorf("thread %d: %d units, estimate %d, %d tokens", j, u.Units, est, u.TotalTokens())
		}
	}
	s.SetOptions(Options{NullItems: true, ExtraFields: true})
	_, m := get(main)
	if ms := m["models"].([]any); ms[len(ms)-1] != nil || m["x-standin"] == nil {
		t.Errorf("null items, extra fields: %v", m)
	}
	if ids := m["subThreadIDs"].([]any); ids[len(ids)-1] != nil {
		t.Errorf("no null sub-thread id: %v", ids)
	}
	noSubs := 0
	for noSubs = 0; s.ws.thread(399-noSubs, 0).subs > 0; noSubs++ {
	}
	id := s.ThreadID(399-noSubs, 0)
	for _, tc := range []struct {
		opts    Options
		present bool
		null    bool
	}{{Options{}, true, false}, {Options{OmitOptional: true}, false, false}, {Options{NullOptional: true}, true, true}} {
		s.SetOptions(tc.opts)
		_, m := get(id)
		v, ok := m["subThreadIDs"]
		if ok != tc.present || ok && (v == nil) != tc.null {
			t.Errorf("%+v: subThreadIDs %v (%t)", tc.opts, v, ok)
		}
	}
}

// TestFiguresThatMayNotAddUp: a thread's usage rounded to cents is not
// its models' sum; the rollup's totalTokens counts all four, only input
// and output, or is absent.
func TestFiguresThatMayNotAddUp(t *testing.T) {
	s := New(Config{Seed: 13, Users: 3, Threads: 50, Days: 5}, Options{ThreadUsageRounded: true})
	defer s.Close()
	c := newClient(t, s)
	differ := 0
	for i := 40; i < 50; i++ {
		m := c.object("/api/v2/threads/"+s.ThreadID(i, 0)+"/usage", nil)
		var sum int64
		for _, x := range m["models"].([]any) {
			sum += units(x.(map[string]any)["usage"])
		}
		got := m["usage"].(float64)
		if math.Abs(got*100-math.Round(got*100)) > 1e-9 {
			t.Errorf("usage %v is not in cents", got)
		}
		if units(got) != sum {
			differ++
		}
	}
	if differ == 0 {
		t.Errorf("no rounded total differs from its models")
	}
	for _, tc := range []struct {
		mode TotalTokensMode
		want func(u Usage) (int64, bool)
	}{
		{TotalTokensAll, func(u Usage) (int64, bool) { return u.TotalTokens(), true }},
		{TotalTokensNoCache, func(u Usage) (int64, bool) { return u.InputTokens + u.OutputTokens, true }},
		{TotalTokensAbsent, func(Usage) (int64, bool) { return 0, false }},
	} {
		s.SetOptions(Options{TotalTokens: tc.mode})
		m := c.object("/api/v2/workspace/analytics/daily-usage", url.Values{"lookbackDays": {"3"}})
		n := 0
		for _, d := range m["data"].([]any) {
			for _, u := range d.(map[string]any)["users"].([]any) {
				for _, x := range u.(map[string]any)["models"].(map[string]any) {
					e := x.(map[string]any)
					v, ok := e["totalTokens"]
					want, present := tc.want(modelUsage(e))
					if ok != present || ok && num(v) != want {
						t.Fatalf("mode %d: totalTokens %v, want %d", tc.mode, v, want)
					}
					n++
				}
			}
		}
		if n == 0 {
			t.Fatal("no model entries")
		}
	}
	if s.TokenURL() != s.URL+"/oauth2/token" {
		t.Errorf("TokenURL %s", s.TokenURL())
	}
}
