package workspacetest

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"
)

func dailyDates(m map[string]any) []string {
	var out []string
	for _, x := range m["data"].([]any) {
		if x != nil {
			out = append(out, x.(map[string]any)["date"].(string))
		}
	}
	return out
}

func addDays(date string, n int) string {
	d, _ := time.Parse(time.DateOnly, date)
	return d.AddDate(0, 0, n).Format(time.DateOnly)
}

// TestDailyWindow: lookbackDays within 1–365, its default, endDate, a
// window one day longer, the 365-day age limit, and the metadata naming
// the window.
func TestDailyWindow(t *testing.T) {
	s := New(Config{Seed: 21, Users: 5, Threads: 300, Days: 400}, Options{})
	defer s.Close()
	c := newClient(t, s)
	today := s.Today()
	for _, tc := range []struct {
		name       string
		opts       Options
		q          url.Values
		want       int
		first, end string
		days       int
	}{
		{"default 30", Options{}, nil, 200, addDays(today, -29), today, 30},
		{"default 7", Options{DefaultLookback: 7}, nil, 200, addDays(today, -6), today, 7},
		{"1 day", Options{}, url.Values{"lookbackDays": {"1"}}, 200, today, today, 1},
		{"365 days", Options{}, url.Values{"lookbackDays": {"365"}}, 200, addDays(today, -364), today, 365},
		{"0 days", Options{}, url.Values{"lookbackDays": {"0"}}, 400, "", "", 0},
		{"366 days", Options{}, url.Values{"lookbackDays": {"366"}}, 400, "", "", 0},
		{"bad endDate", Options{}, url.Values{"endDate": {"12/08/2026"}}, 400, "", "", 0},
		{"endDate", Options{}, url.Values{"lookbackDays": {"3"}, "endDate": {addDays(today, -10)}}, 200, addDays(today, -12), addDays(today, -10), 3},
		{"one day longer", Options{WindowOneDayLonger: true}, url.Values{"lookbackDays": {"3"}}, 200, addDays(today, -3), today, 4},
		{"old window", Options{}, url.Values{"lookbackDays": {"10"}, "endDate": {addDays(today, -370)}}, 200, addDays(today, -379), addDays(today, -370), 10},
		{"old window, max age", Options{MaxAge365: true}, url.Values{"lookbackDays": {"10"}, "endDate": {addDays(today, -360)}}, 200, addDays(today, -365), addDays(today, -360), 6},
		{"renamed", Options{Params: ParamNames{LookbackDays: "days"}}, url.Values{"days": {"2"}}, 200, addDays(today, -1), today, 2},
		{"renamed endDate", Options{Params: ParamNames{EndDate: "to"}}, url.Values{"lookbackDays": {"3"}, "to": {addDays(today, -10)}}, 200, addDays(today, -12), addDays(today, -10), 3},
		{"old endDate name ignored", Options{Params: ParamNames{EndDate: "to"}}, url.Values{"lookbackDays": {"3"}, "endDate": {addDays(today, -10)}}, 200, addDays(today, -2), today, 3},
		{"unknown refused", Options{StrictParams: true}, url.Values{"userID": {s.RollupUserID(0)}}, 400, "", "", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s.SetOptions(tc.opts)
			status, _, b := c.get("/api/v2/workspace/analytics/daily-usage", tc.q)
			if status != tc.want {
				t.Fatalf("%d %s", status, b)
			}
			if status != 200 {
				return
			}
			m := c.object("/api/v2/workspace/analytics/daily-usage", tc.q)
			dates := dailyDates(m)
			if len(dates) != tc.days || dates[0] != tc.first || dates[len(dates)-1] != tc.end {
				t.Errorf("%d days %v…, want %d from %s to %s", len(dates), dates[:min(2, len(dates))], tc.days, tc.first, tc.end)
			}
			meta := m["metadata"].(map[string]any)
			if meta["endDate"] != tc.end || num(meta["totalUsers"]) != 5 {
				t.Errorf("metadata %v", meta)
			}
		})
	}
}

// TestDailyShapes: the user filter, empty days, members without
// activity, a size limit, null items, left-out fields, and the figures of
// a member's day (metrics.usage the sum of its models' unless spend
// outside threads is switched on).
func TestDailyShapes(t *testing.T) {
	cfgs := map[string]Config{
		"plain":       {Seed: 22, Users: 30, Threads: 20, Days: 20},
		"non-thread":  {Seed: 22, Users: 30, Threads: 20, Days: 20, NonThreadUsage: true},
		"lines min":   {Seed: 22, Users: 30, Threads: 20, Days: 20, LinesModified: LinesMinOfAddedDeleted},
		"lines zero":  {Seed: 22, Users: 30, Threads: 20, Days: 20, LinesModified: LinesZero},
		"separateIDs": {Seed: 22, Users: 30, Threads: 20, Days: 20, SeparateUserIDs: true},
	}
	q := url.Values{"lookbackDays": {"25"}}
	for name, cfg := range cfgs {
		t.Run(name, func(t *testing.T) {
			s := New(cfg, Options{})
			defer s.Close()
			c := newClient(t, s)
			m := c.object("/api/v2/workspace/analytics/daily-usage", q)
			entries, emptyDays := 0, 0
			for _, x := range m["data"].([]any) {
				users := x.(map[string]any)["users"].([]any)
				if len(users) == 0 {
					emptyDays++
				}
				for _, y := range users {
					entries++
					ue := y.(map[string]any)
					me := ue["metrics"].(map[string]any)
					var models int64
					for _, z := range ue["models"].(map[string]any) {
						models += units(z.(map[string]any)["usage"])
					}
					want := models
					if cfg.NonThreadUsage {
						want += NonThreadUnits
					}
					if got := units(me["usage"]); got != want {
						t.Errorf("metrics.usage %d units, models %d", got, models)
					}
					a, d, mod := num(me["linesAdded"]), num(me["linesDeleted"]), num(me["linesModified"])
					switch cfg.LinesModified {
					case LinesMinOfAddedDeleted:
						if mod != min(a, d) {
							t.Errorf("linesModified %d of %d, %d", mod, a, d)
						}
					case LinesZero:
						if mod != 0 {
							t.Errorf("linesModified %d", mod)
						}
					}
					id := ue["user"].(map[string]any)["id"].(string)
					if cfg.SeparateUserIDs != strings.HasPrefix(id, "member_") {
						t.Errorf("user id %s", id)
					}
				}
			}
			if entries == 0 || emptyDays == 0 {
				t.Fatalf("%d entries, %d empty days: the case does not test", entries, emptyDays)
			}
			s.SetOptions(Options{SkipEmptyDays: true})
			if got := len(dailyDates(c.object("/api/v2/workspace/analytics/daily-usage", q))); got != 25-emptyDays {
				t.Errorf("SkipEmptyDays: %d days, want %d", got, 25-emptyDays)
			}
			s.SetOptions(Options{ZeroUsers: true})
			zm := c.object("/api/v2/workspace/analytics/daily-usage", q)
			for _, x := range zm["data"].([]any) {
				if n := len(x.(map[string]any)["users"].([]any)); n != cfg.Users {
					t.Fatalf("ZeroUsers: %d users a day", n)
				}
			}
		})
	}
	s := New(cfgs["plain"], Options{})
	defer s.Close()
	c := newClient(t, s)
	one := s.RollupUserID(int(s.ws.thread(19, 0).creator))
	for _, tc := range []struct {
		name  string
		opts  Options
		check func(t *testing.T, m map[string]any)
	}{
		{"user filter ignored", Options{}, func(t *testing.T, m map[string]any) {
			if countUsers(m, "") == countUsers(m, one) {
				t.Errorf("only %s listed", one)
			}
		}},
		{"user filter", Options{UserIDFilter: true}, func(t *testing.T, m map[string]any) {
			if n := countUsers(m, ""); n == 0 || n != countUsers(m, one) {
				t.Errorf("%d entries, %d of %s", n, countUsers(m, one), one)
			}
		}},
		{"null items", Options{NullItems: true}, func(t *testing.T, m map[string]any) {
			data := m["data"].([]any)
			if data[len(data)-1] != nil {
				t.Errorf("no null day")
			}
			users := data[len(data)-2].(map[string]any)["users"].([]any)
			if users[len(users)-1] != nil {
				t.Errorf("no null user")
			}
		}},
		{"optional left out", Options{OmitOptional: true}, func(t *testing.T, m map[string]any) {
			meta := m["metadata"].(map[string]any)
			if _, ok := meta["activeUsers"]; ok || hasEmail(m) {
				t.Errorf("metadata %v, e-mails %t", meta, hasEmail(m))
			}
		}},
		{"optional null", Options{NullOptional: true}, func(t *testing.T, m map[string]any) {
			if v, ok := m["metadata"].(map[string]any)["totalUsers"]; !ok || v != nil {
				t.Errorf("totalUsers %v", v)
			}
		}},
		{"list price everywhere", Options{ListPrice: ListPriceEverywhere}, func(t *testing.T, m map[string]any) {
			for _, x := range m["data"].([]any) {
				for _, y := range x.(map[string]any)["users"].([]any) {
					for _, z := range y.(map[string]any)["models"].(map[string]any) {
						if units(z.(map[string]any)["estimatedProviderCostAtListPriceUSD"]) != units(z.(map[string]any)["usage"]) {
							t.Fatalf("estimate %v", z)
						}
					}
				}
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s.SetOptions(tc.opts)
			tc.check(t, c.object("/api/v2/workspace/analytics/daily-usage", url.Values{"lookbackDays": {"25"}, "userID": {one}}))
		})
	}
	s.SetOptions(Options{DailyMaxBytes: 2000})
	if status, _, b := c.get("/api/v2/workspace/analytics/daily-usage", url.Values{"lookbackDays": {"25"}}); status != http.StatusBadRequest {
		t.Errorf("over the size limit: %d %d bytes", status, len(b))
	}
	if status, _, _ := c.get("/api/v2/workspace/analytics/daily-usage", url.Values{"lookbackDays": {"1"}, "endDate": {addDays(s.Today(), -100)}}); status != http.StatusOK {
		t.Errorf("under the size limit: %d", status)
	}
}

func countUsers(m map[string]any, id string) (n int) {
	for _, x := range m["data"].([]any) {
		for _, y := range x.(map[string]any)["users"].([]any) {
			if id == "" || y.(map[string]any)["user"].(map[string]any)["id"] == id {
				n++
			}
		}
	}
	return n
}

func hasEmail(m map[string]any) bool {
	for _, x := range m["data"].([]any) {
		for _, y := range x.(map[string]any)["users"].([]any) {
			if _, ok := y.(map[string]any)["user"].(map[string]any)["email"]; ok {
				return true
			}
		}
	}
	return false
}

// TestDailyZone: the rollup's dates follow Config.Zone, so a thread near
// midnight lands on another date, and the totals stay the same.
func TestDailyZone(t *testing.T) {
	utc := New(Config{Seed: 23, Users: 3, Threads: 200, Days: 10}, Options{})
	defer utc.Close()
	east := New(Config{Seed: 23, Users: 3, Threads: 200, Days: 10, Zone: time.FixedZone("UTC+9", 9*3600)}, Options{})
	defer east.Close()
	a, b := utc.Rollup(), east.Rollup()
	if a.Total != b.Total {
		t.Errorf("totals differ: %+v, %+v", a.Total, b.Total)
	}
	perDay := func(r Rollup) map[string]int64 {
		out := map[string]int64{}
		for k, u := range r.ByDay {
			out[k.Day] += u.Units
		}
		return out
	}
	pa, pb := perDay(a), perDay(b)
	same := 0
	for d, v := range pa {
		if pb[d] == v {
			same++
		}
	}
	if same == len(pa) {
		t.Errorf("the zone moved no spend to another date")
	}
	if utc.Today() != "2026-08-12" || east.Today() != "2026-08-12" {
		t.Errorf("today %s, %s", utc.Today(), east.Today())
	}
	late := New(Config{Seed: 23, Users: 3, Threads: 200, Days: 10, Now: time.Date(2026, 8, 12, 20, 0, 0, 0, time.UTC), Zone: time.FixedZone("UTC+9", 9*3600)}, Options{})
	defer late.Close()
	if late.Today() != "2026-08-13" {
		t.Errorf("today at 20:00 UTC in UTC+9: %s", late.Today())
	}
}
