package backfill

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/amp-exporter/amp-exporter/store"
)

// rollupDays is three days of a two-member rollup, given out of order,
// and a day after until.
var rollupDays = []store.WorkspaceDay{
	{Day: "2026-08-11", User: "u1", Added: 5, Models: map[string]float64{"m-a": 0.5}},
	{Day: "2026-08-10", User: "u1", Added: 10, Deleted: 2, Models: map[string]float64{"m-a": 1.25, "m-b": 0.75}},
	{Day: "2026-08-10", User: "u2", Added: 1, Models: map[string]float64{"m-b": 2}},
	{Day: "2026-08-12", User: "u2", Deleted: 4, Models: map[string]float64{"m-b": 0.125}},
	{Day: "2026-08-14", User: "u1", Added: 100, Models: map[string]float64{"m-a": 100}},
}

// TestWorkspaceHistory: each series is cumulative from each day's start
// on, ends at what a store that counts every day up to until shows (the
// live counter's first value), leaves the days after until out, and
// takes its user label as amp_workspace.user_label says.
func TestWorkspaceHistory(t *testing.T) {
	until := time.Date(2026, 8, 12, 15, 0, 0, 0, time.UTC)
	day := func(s string) int64 {
		d, _ := time.Parse(time.DateOnly, s)
		return d.UnixMilli()
	}
	times := []int64{day("2026-08-10") - 3600_000, day("2026-08-10"), day("2026-08-11") + 3600_000, day("2026-08-12"), until.UnixMilli()}
	for _, tc := range []struct {
		name, userLabel string
		want            []string
	}{
		{"user id", "id", []string{
			`amp_workspace_daily_usage_usd_total{job="j",model="m-a",user="u1"} 1.25 1786320000`,
			`amp_workspace_daily_usage_usd_total{job="j",model="m-a",user="u1"} 1.75 1786410000`,
			`amp_workspace_daily_usage_usd_total{job="j",model="m-a",user="u1"} 1.75 1786546800`,
			`amp_workspace_daily_usage_usd_total{job="j",model="m-b",user="u2"} 2 1786320000`,
			`amp_workspace_daily_usage_usd_total{job="j",model="m-b",user="u2"} 2.125 1786492800`,
			`amp_workspace_lines_total{job="j",kind="added",user="u1"} 15 1786410000`,
			`amp_workspace_lines_total{job="j",kind="deleted",user="u2"} 4 1786546800`,
		}},
		{"e-mail", "email", []string{
			`amp_workspace_daily_usage_usd_total{job="j",model="m-a",user="one@example.com"} 1.75 1786546800`,
			`amp_workspace_lines_total{job="j",kind="added",user="u2"} 1 1786546800`,
		}},
		{"off", "off", []string{
			`amp_workspace_daily_usage_usd_total{job="j",model="m-b"} 2.875 1786546800`,
			`amp_workspace_lines_total{job="j",kind="added"} 16 1786546800`,
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h, err := NewWorkspaceHistory(rollupDays, map[string]string{"u1": "one@example.com"}, tc.userLabel, nil, until)
			if err != nil {
				t.Fatal(err)
			}
			if got := h.First(); !got.Equal(time.UnixMilli(day("2026-08-10"))) {
				t.Errorf("first %v", got)
			}
			var b bytes.Buffer
			if _, err := WriteOpenMetrics(&b, nil, []Label{{"job", "j"}}, h.Series(times)...); err != nil {
				t.Fatal(err)
			}
			out := b.String()
			for _, w := range tc.want {
				if !strings.Contains(out, w+"\n") {
					t.Errorf("no line %s in\n%s", w, out)
				}
			}
			if strings.Contains(out, " 101.75 ") || strings.Contains(out, "added\",user=\"u1\"} 115 ") {
				t.Errorf("a day after until is in the history:\n%s", out)
			}
			if strings.Contains(out, " 1786316400\n") {
				t.Errorf("a sample before the first day's start:\n%s", out)
			}
			// The last sample of each series is the live counter's first
			// value: a store that counted every day up to until.
			live := store.NewWorkspaceStore(nil, store.NewRepositories(nil))
			live.SetUserLabel(tc.userLabel)
			live.SetEmail("u1", "one@example.com")
			for _, d := range rollupDays[:4] {
				live.ApplyDay(d)
			}
			snap := live.Snapshot()
			n := 0
			for _, s := range h.Series(times) {
				last := s.growth[len(s.growth)-1].V
				user, l1 := "", ""
				for _, l := range s.Labels {
					switch l.Name {
					case "user":
						user = l.Value
					case "model", "kind":
						l1 = l.Value
					}
				}
				want := snap.DailyUSD[store.WSKey{L1: l1, User: user}]
				if s.Metric == WorkspaceLinesMetric {
					want = float64(snap.Lines[store.WSKey{L1: l1, User: user}])
				}
				if last != want {
					t.Errorf("%s %v: ends at %v, the live store shows %v", s.Metric, s.Labels, last, want)
				}
				n++
			}
			if n != len(snap.DailyUSD)+len(snap.Lines) {
				t.Errorf("%d series, the live store has %d", n, len(snap.DailyUSD)+len(snap.Lines))
			}
			if !strings.HasSuffix(out, "# EOF\n") {
				t.Error("no # EOF at the end")
			}
		})
	}
}

func TestWorkspaceHistoryBadDate(t *testing.T) {
	_, err := NewWorkspaceHistory([]store.WorkspaceDay{{Day: "12/08/2026", User: "u"}}, nil, "id", nil, time.Now())
	if err == nil || !strings.Contains(err.Error(), "12/08/2026") {
		t.Errorf("err %v, want one naming the date", err)
	}
}
