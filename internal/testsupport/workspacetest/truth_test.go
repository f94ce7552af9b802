package workspacetest

import (
	"maps"
	"net/http"
	"net/url"
	"strconv"
	"testing"
	"time"
)

// served is what a client that does everything right sums from the
// endpoints: every main thread's usage (rows with mainThreadID skipped),
// by creator and model and by first repository, and the whole rollup.
type served struct {
	byUserModel map[UserModel]Usage
	byRepo      map[string]Usage
	subRows     int
	mainRows    int
	pastWindow  int
	byDay       map[DayUserModel]Usage
	userDay     map[DayUser]UserDay
}

func fetchAll(t *testing.T, s *Server) served {
	t.Helper()
	c := newClient(t, s)
	out := served{byUserModel: map[UserModel]Usage{}, byRepo: map[string]Usage{},
		byDay: map[DayUserModel]Usage{}, userDay: map[DayUser]UserDay{}}
	rows, _ := c.listAll(nil)
	for _, row := range rows {
		if _, sub := row["mainThreadID"]; sub {
			out.subRows++
			continue
		}
		out.mainRows++
		id := row["id"].(string)
		status, _, b := c.get("/api/v2/threads/"+url.PathEscape(id)+"/usage", nil)
		if status == http.StatusNotFound {
			out.pastWindow++
			continue
		}
		if status != http.StatusOK {
			t.Fatalf("usage of %s: %d %s", id, status, b)
		}
		m := c.object("/api/v2/threads/"+url.PathEscape(id)+"/usage", nil)
		repo := ""
		if rs, _ := row["repositories"].([]any); len(rs) > 0 {
			repo = rs[0].(map[string]any)["url"].(string)
		}
		var sum int64
		for _, x := range m["models"].([]any) {
			e := x.(map[string]any)
			u := modelUsage(e)
			sum += u.Units
			add(out.byUserModel, UserModel{row["creatorUserID"].(string), e["model"].(string)}, u)
			add(out.byRepo, repo, u)
		}
		if got := units(m["usage"]); got != sum {
			t.Errorf("%s: usage %d units, its models %d", id, got, sum)
		}
	}
	days := s.ws.today() + 1
	for end := s.ws.today(); end >= 0; end -= MaxLookbackDays {
		lb := min(MaxLookbackDays, end+1)
		m := c.object("/api/v2/workspace/analytics/daily-usage", url.Values{
			"lookbackDays": {strconv.Itoa(lb)}, "endDate": {s.ws.date(end)}})
		for _, x := range m["data"].([]any) {
			day := x.(map[string]any)
			date := day["date"].(string)
			days--
			for _, y := range day["users"].([]any) {
				ue := y.(map[string]any)
				id := ue["user"].(map[string]any)["id"].(string)
				me := ue["metrics"].(map[string]any)
				out.userDay[DayUser{date, id}] = UserDay{Units: units(me["usage"]),
					LinesAdded: num(me["linesAdded"]), LinesDeleted: num(me["linesDeleted"]), LinesModified: num(me["linesModified"])}
				for model, z := range ue["models"].(map[string]any) {
					mu := z.(map[string]any)
					u := modelUsage(mu)
					if num(mu["totalTokens"]) != u.TotalTokens() {
						t.Errorf("%s %s %s: totalTokens %v", date, id, model, mu["totalTokens"])
					}
					out.byDay[DayUserModel{date, id, model}] = u
				}
			}
		}
	}
	if days != 0 {
		t.Errorf("the rollup's windows missed %d days", days)
	}
	return out
}

// TestEndpointsAddUpToTheTruth holds the stand-in to its truth: what a
// client sums from the listing and each thread's usage is ThreadTotals
// exactly (sub-threads once), the rollup served is Rollup, and the rollup
// summed over its days is the thread view of every thread.
func TestEndpointsAddUpToTheTruth(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  Config
		opts Options
	}{
		{"issue scale", Config{Seed: 1}, Options{}},
		{"small, rows only", Config{Seed: 2, Users: 7, Threads: 300, Days: 30}, Options{SubThreads: SubThreadsRowsOnly}},
		{"window from last activity", Config{Seed: 3, Users: 5, Threads: 200, Days: 100}, Options{RetentionFrom: AgeFromLastActivity}},
		{"byok and separate ids", Config{Seed: 4, Users: 6, Threads: 200, Days: 40, BYOKEvery: 3, SeparateUserIDs: true}, Options{}},
		{"workspace zone", Config{Seed: 5, Users: 4, Threads: 150, Days: 20, Zone: time.FixedZone("UTC-7", -7*3600)}, Options{}},
		{"400 days", Config{Seed: 6, Users: 3, Threads: 100, Days: 400}, Options{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := New(tc.cfg, tc.opts)
			defer s.Close()
			got := fetchAll(t, s)
			want := s.ThreadTotals(true)
			if !maps.Equal(got.byUserModel, want.ByUserModel) {
				t.Errorf("per user and model: served %v\ntruth %v", got.byUserModel, want.ByUserModel)
			}
			if !maps.Equal(got.byRepo, want.ByRepository) {
				t.Errorf("per repository: served %v\ntruth %v", got.byRepo, want.ByRepository)
			}
			if got.mainRows != s.Config().Threads || got.mainRows-got.pastWindow != want.MainThreads {
				t.Errorf("%d main rows, %d past the window; truth %d of %d served", got.mainRows, got.pastWindow, want.MainThreads, s.Config().Threads)
			}
			if got.subRows != s.ThreadTotals(false).SubThreads {
				t.Errorf("%d sub-thread rows, truth %d", got.subRows, s.ThreadTotals(false).SubThreads)
			}
			ro := s.Rollup()
			if !maps.Equal(got.byDay, ro.ByDay) || !maps.Equal(got.userDay, ro.UserDay) {
				t.Errorf("rollup served (%d entries, %d user days) is not the truth's (%d, %d)", len(got.byDay), len(got.userDay), len(ro.ByDay), len(ro.UserDay))
			}
			// The rollup over its days is the thread view of every thread,
			// when both name members alike.
			all := s.ThreadTotals(false)
			if all.Total != ro.Total {
				t.Errorf("rollup total %+v, threads %+v", ro.Total, all.Total)
			}
			if !tc.cfg.SeparateUserIDs {
				perUser := map[UserModel]Usage{}
				for k, u := range ro.ByDay {
					add(perUser, UserModel{k.User, k.Model}, u)
				}
				if !maps.Equal(perUser, all.ByUserModel) {
					t.Errorf("rollup per user and model is not the thread view")
				}
			}
			if tc.name == "issue scale" && (got.pastWindow == 0 || got.subRows == 0 || len(want.ByRepository) != len(Repositories)+1) {
				t.Errorf("the issue's workspace lacks a case: %d past the window, %d sub-threads, %d repositories",
					got.pastWindow, got.subRows, len(want.ByRepository))
			}
		})
	}
}
