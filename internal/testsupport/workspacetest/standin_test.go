package workspacetest

import (
	"bytes"
	"maps"
	"net/http"
	"net/url"
	"runtime"
	"strconv"
	"testing"
	"time"
)

// TestTodayGrows: Grow adds to today's threads' usage and to today's
// rollup, moves their updatedAt, and the truth follows; GrowEachRequest
// grows before every API request; closed days do not move.
func TestTodayGrows(t *testing.T) {
	s := New(Config{Seed: 31, Users: 5, Threads: 300, Days: 30}, Options{})
	defer s.Close()
	c := newClient(t, s)
	today := s.TodayThreads()
	if len(today) == 0 {
		t.Fatal("no thread active today")
	}
	id := s.ThreadID(today[0], 0)
	usd := func() float64 {
		return c.object("/api/v2/threads/"+id+"/usage", nil)["usage"].(float64)
	}
	updated := func() string {
		rows, _ := c.listAll(url.Values{"sort": {"DESC"}})
		for _, r := range rows {
			if r["id"] == id {
				return r["updatedAt"].(string)
			}
		}
		t.Fatal("thread not listed")
		return ""
	}
	q := url.Values{"lookbackDays": {"2"}}
	day := func() (yesterday, today float64) {
		m := c.object("/api/v2/workspace/analytics/daily-usage", q)
		return m["data"].([]any)[0].(map[string]any)["users"].([]any)[0].(map[string]any)["metrics"].(map[string]any)["usage"].(float64),
			m["metadata"].(map[string]any)["totalUsage"].(float64)
	}
	u0, up0 := usd(), updated()
	y0, tot0 := day()
	truth0 := s.ThreadTotals(true).Total
	s.Grow()
	u1, up1 := usd(), updated()
	y1, tot1 := day()
	if u1 <= u0 || up1 <= up0 || tot1 <= tot0 || y1 != y0 {
		t.Errorf("after Grow: usage %v → %v, updatedAt %s → %s, window total %v → %v, yesterday %v → %v", u0, u1, up0, up1, tot0, tot1, y0, y1)
	}
	truth1 := s.ThreadTotals(true).Total
	var want int64
	for _, i := range today {
		want += growthUsage(UserModels(s.ws.thread(i, 0).creator)[0]).Units
	}
	if grew := truth1.Units - truth0.Units; grew != want || grew <= 0 {
		t.Errorf("the truth grew %d units, want %d", grew, want)
	}
	if got := fetchAll(t, s); !maps.Equal(got.byUserModel, s.ThreadTotals(true).ByUserModel) || !maps.Equal(got.byDay, s.Rollup().ByDay) {
		t.Errorf("after growth the endpoints and the truth differ")
	}
	s.SetOptions(Options{GrowEachRequest: true})
	a, b := usd(), usd()
	if !(b > a) {
		t.Errorf("GrowEachRequest: %v then %v", a, b)
	}
}

// TestRestateClosedDay: a closed day of the rollup changes for one member
// (model usage and metrics.usage), the truth's Rollup with it, the thread
// view not; today cannot be restated.
func TestRestateClosedDay(t *testing.T) {
	s := New(Config{Seed: 32, Users: 5, Threads: 300, Days: 30}, Options{})
	defer s.Close()
	before := s.Rollup()
	threads := s.ThreadTotals(false)
	var key DayUser
	for k := range before.UserDay {
		if k.Day < s.Today() {
			key = k
			break
		}
	}
	if !s.Restate(key.Day, key.User, -UnitsPerUSD/4) {
		t.Fatal("Restate refused a closed day")
	}
	if s.Restate(s.Today(), key.User, 1) || s.Restate("2020-01-01", key.User, 1) || s.Restate("soon", key.User, 1) {
		t.Error("Restate took today, a day before the rollup or no date")
	}
	after := s.Rollup()
	if got := after.UserDay[key].Units - before.UserDay[key].Units; got != -UnitsPerUSD/4 {
		t.Errorf("metrics.usage moved %d units", got)
	}
	if after.Total.Units-before.Total.Units != -UnitsPerUSD/4 || s.ThreadTotals(false).Total != threads.Total {
		t.Errorf("totals: rollup %d → %d, threads changed %t", before.Total.Units, after.Total.Units, s.ThreadTotals(false).Total != threads.Total)
	}
	got := fetchAll(t, s)
	if !maps.Equal(got.byDay, after.ByDay) || !maps.Equal(got.userDay, after.UserDay) {
		t.Errorf("the rollup served is not the restated truth")
	}
}

// TestFaults: queued faults answer once each, per route or for any, with
// Retry-After as seconds, as an HTTP-date or not at all; the rate-limit
// headers when switched on.
func TestFaults(t *testing.T) {
	s := New(Config{Seed: 33, Users: 2, Threads: 10, Days: 5}, Options{})
	defer s.Close()
	c := newClient(t, s)
	date := RetryAfterDate(time.Date(2026, 8, 12, 12, 0, 30, 0, time.UTC))
	s.Fail(RouteThreads, Fault{Status: 429, RetryAfter: "7"}, Fault{Status: 429, RetryAfter: date}, Fault{Status: 429})
	s.Fail(RouteToken, Fault{Status: 500})
	for _, want := range []struct {
		status int
		retry  string
	}{{429, "7"}, {429, "Wed, 12 Aug 2026 12:00:30 GMT"}, {429, ""}, {200, ""}} {
		status, h, b := c.get("/api/v2/threads", nil)
		if status != want.status || h.Get("Retry-After") != want.retry {
			t.Errorf("%d %q %s, want %d %q", status, h.Get("Retry-After"), b, want.status, want.retry)
		}
	}
	s.Fail(RouteAny, Fault{Status: 503})
	if status, _, _ := c.get("/api/v2/workspace/analytics/daily-usage", nil); status != 503 {
		t.Errorf("RouteAny: %d", status)
	}
	if status, _, _ := c.get("/api/v2/workspace/analytics/daily-usage", nil); status != 200 {
		t.Errorf("after the fault: %d", status)
	}
	if status, _ := tokenRequest(t, s, true, false, url.Values{"grant_type": {"client_credentials"}}); status != 500 {
		t.Errorf("token fault: %d", status)
	}
	s.SetOptions(Options{RateLimitHeaders: true})
	_, h, _ := c.get("/api/v2/threads", nil)
	if rem, err := strconv.Atoi(h.Get("X-RateLimit-Remaining")); err != nil || rem >= 600 || h.Get("X-RateLimit-Limit") != "600" {
		t.Errorf("rate-limit headers %v", h)
	}
	s.SetOptions(Options{})
	if _, h, _ := c.get("/api/v2/threads", nil); h.Get("X-RateLimit-Limit") != "" {
		t.Errorf("rate-limit headers when off")
	}
}

// TestRequestsRecorded: each request's method, route, path, status and
// bytes, and the byte total, for tests that measure request budgets.
func TestRequestsRecorded(t *testing.T) {
	s := New(Config{Seed: 34, Users: 2, Threads: 10, Days: 5}, Options{})
	defer s.Close()
	c := newClient(t, s)
	s.ResetRequests()
	_, _, b1 := c.get("/api/v2/threads", url.Values{"limit": {"3"}})
	_, _, b2 := c.get("/api/v2/threads/"+s.ThreadID(9, 0)+"/usage", nil)
	_, _, b3 := c.get("/api/v2/workspace/members", nil)
	rs := s.Requests()
	want := []Request{
		{Method: "GET", Route: RouteThreads, Path: "/api/v2/threads", Query: "limit=3", Status: 200, Bytes: int64(len(b1))},
		{Method: "GET", Route: RouteUsage, Path: "/api/v2/threads/" + s.ThreadID(9, 0) + "/usage", Status: 200, Bytes: int64(len(b2))},
		{Method: "GET", Route: RouteMembers, Path: "/api/v2/workspace/members", Status: 404, Bytes: int64(len(b3))},
	}
	if len(rs) != len(want) {
		t.Fatalf("%d requests recorded: %+v", len(rs), rs)
	}
	for i := range want {
		if rs[i] != want[i] {
			t.Errorf("request %d: %+v, want %+v", i, rs[i], want[i])
		}
	}
	if s.BytesServed() != int64(len(b1)+len(b2)+len(b3)) || s.Count(RouteUsage) != 1 {
		t.Errorf("%d bytes, %d usage requests", s.BytesServed(), s.Count(RouteUsage))
	}
	s.SetOptions(Options{Members: true})
	m := c.object("/api/v2/workspace/members", nil)
	if ms := m["members"].([]any); len(ms) != 2 || ms[1].(map[string]any)["email"] != s.Email(1) {
		t.Errorf("members %v", m)
	}
}

// TestSubThreadsByOthers: with sub-threads by another member, the thread
// view gives their spend to the parent's creator and the rollup to their
// own: per member they differ, in total they agree.
func TestSubThreadsByOthers(t *testing.T) {
	s := New(Config{Seed: 35, Users: 6, Threads: 300, Days: 20, SubThreadsByOthers: true}, Options{})
	defer s.Close()
	threads, ro := s.ThreadTotals(false), s.Rollup()
	perUser := map[UserModel]Usage{}
	for k, u := range ro.ByDay {
		add(perUser, UserModel{k.User, k.Model}, u)
	}
	if threads.Total != ro.Total || maps.Equal(perUser, threads.ByUserModel) {
		t.Errorf("totals equal %t, per member equal %t", threads.Total == ro.Total, maps.Equal(perUser, threads.ByUserModel))
	}
	c := newClient(t, s)
	rows, _ := c.listAll(nil)
	others := 0
	creators := map[string]any{}
	for _, r := range rows {
		if _, sub := r["mainThreadID"]; !sub {
			creators[r["id"].(string)] = r["creatorUserID"]
		} else if creators[r["mainThreadID"].(string)] != r["creatorUserID"] {
			others++
		}
	}
	if others != threads.SubThreads || others == 0 {
		t.Errorf("%d of %d sub-threads by another member", others, threads.SubThreads)
	}
}

// TestDeterministic: one seed gives the same answers byte for byte;
// another seed another workspace.
func TestDeterministic(t *testing.T) {
	get := func(seed uint64) []byte {
		s := New(Config{Seed: seed, Users: 4, Threads: 50, Days: 10}, Options{})
		defer s.Close()
		c := newClient(t, s)
		var out []byte
		for _, p := range []string{"/api/v2/threads?limit=100", "/api/v2/threads/" + s.ThreadID(49, 0) + "/usage", "/api/v2/workspace/analytics/daily-usage"} {
			u, _ := url.Parse(p)
			_, _, b := c.get(u.Path, u.Query())
			out = append(out, b...)
		}
		return out
	}
	a, b, other := get(7), get(7), get(8)
	if !bytes.Equal(a, b) || bytes.Equal(a, other) {
		t.Errorf("same seed equal %t, other seed equal %t", bytes.Equal(a, b), bytes.Equal(a, other))
	}
}

// TestLargeWorkspaceIsCheap: 2,000 members and 200,000 threads build
// without any thread's JSON: what New keeps is the rollup's sums, days ×
// members × 2 models, and nothing per thread.
func TestLargeWorkspaceIsCheap(t *testing.T) {
	cfg := Config{Seed: 36, Users: 2000, Threads: 200000, Days: 120}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	s := New(cfg, Options{})
	defer s.Close()
	runtime.GC()
	runtime.ReadMemStats(&after)
	kept := int64(after.HeapAlloc) - int64(before.HeapAlloc)
	// The rollup: 121 days × 2,000 members × 2 slots × (48 + 8) bytes.
	sums := int64(s.ws.today()+1) * 2000 * 2 * 56
	t.Logf("New kept %.1f MB (the rollup's sums %.1f MB)", float64(kept)/1e6, float64(sums)/1e6)
	if kept > sums+sums/4 {
		t.Errorf("New keeps %d bytes; the rollup's sums are %d", kept, sums)
	}
	c := newClient(t, s)
	m := c.object("/api/v2/threads", url.Values{"limit": {"100"}, "after": {stamp(cfg.Now.Add(-24 * time.Hour))}})
	if n := len(m["threads"].([]any)); n != 100 {
		t.Errorf("a page of the last day: %d rows", n)
	}
	if status, _, _ := c.get("/api/v2/threads/"+s.ThreadID(199999, 0)+"/usage", nil); status != http.StatusOK {
		t.Errorf("the newest thread's usage: %d", status)
	}
}
