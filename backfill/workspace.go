package backfill

import (
	"bufio"
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/amp-exporter/amp-exporter/store"
)

// The workspace source's families the backfill writes: Amp's daily rollup
// per member and model (dollars) and per member and kind (lines), named
// and labelled as the live collector names them.
const (
	WorkspaceDailyUsageMetric = "amp_workspace_daily_usage_usd_total"
	WorkspaceLinesMetric      = "amp_workspace_lines_total"
)

var workspaceHelp = map[string]string{
	WorkspaceDailyUsageMetric: "Amp's daily usage rollup in US dollars as Amp reports them, by model and user (a view of its own, never added to amp_cost_usd_total).",
	WorkspaceLinesMetric:      "Lines added, deleted and modified per user, from Amp's daily usage rollup (kind).",
}

// WorkspaceHistory is the workspace source's history: the rollup's days
// counted one after the other by a store.WorkspaceStore, as the live
// source counts them, so that the value of each series at Until is the
// one its live counter starts from (the live source reads the same days
// on its first run). A day's figures count from the day's start (UTC, as
// the live source takes the rollup's dates): the rollup says nothing
// finer. Only the rollup's families have a history: a thread's usage has
// no time of its own but the thread's, and Amp serves it for 90 days only.
type WorkspaceHistory struct {
	series []WorkspaceSeries
	first  int64 // the first day's start (epoch ms); 0 when there is none
}

// WorkspaceSeries is one series of the workspace's history.
type WorkspaceSeries struct {
	Metric string
	// Labels are the series' own labels (user, model or kind), sorted;
	// an empty value is left out, as the live exporter leaves it out.
	Labels []Label
	// growth is the cumulative value from each day's start on, by time.
	growth []wsPoint
	// Times are the sample times from the series' first growth on
	// (WorkspaceHistory.Series).
	Times []int64
}

type wsPoint struct {
	T int64
	V float64
}

// NewWorkspaceHistory counts the rollup's member-days (in any order):
// emails maps the rollup's user ids to e-mails (for user_label: email),
// userLabel is amp_workspace.user_label, labels the label cap shared with
// the other sources. Days that start after until are left to the live
// counters.
func NewWorkspaceHistory(days []store.WorkspaceDay, emails map[string]string, userLabel string,
	labels *store.LabelCap, until time.Time) (*WorkspaceHistory, error) {
	days = slices.Clone(days)
	slices.SortStableFunc(days, func(a, b store.WorkspaceDay) int {
		return cmp.Or(strings.Compare(a.Day, b.Day), strings.Compare(a.User, b.User))
	})
	st := store.NewWorkspaceStore(labels, store.NewRepositories(nil))
	st.SetUserLabel(userLabel)
	for _, id := range slices.Sorted(maps.Keys(emails)) {
		st.SetEmail(id, emails[id])
	}
	type key struct {
		metric string
		k      store.WSKey
	}
	byKey := map[key]*WorkspaceSeries{}
	h := &WorkspaceHistory{}
	record := func(metric, l1Name string, k store.WSKey, v float64, at int64) {
		s := byKey[key{metric, k}]
		if s == nil {
			ls := []Label{{l1Name, k.L1}, {"user", k.User}}
			ls = slices.DeleteFunc(ls, func(l Label) bool { return l.Value == "" })
			slices.SortFunc(ls, func(a, b Label) int { return strings.Compare(a.Name, b.Name) })
			s = &WorkspaceSeries{Metric: metric, Labels: ls}
			byKey[key{metric, k}] = s
		}
		if n := len(s.growth); n == 0 || s.growth[n-1].V != v {
			s.growth = append(s.growth, wsPoint{at, v})
		}
	}
	for i := 0; i < len(days); {
		j := i
		for j < len(days) && days[j].Day == days[i].Day {
			j++
		}
		start, err := time.Parse(time.DateOnly, days[i].Day)
		if err != nil {
			return nil, fmt.Errorf("workspace history: the rollup's date %q: %w", days[i].Day, err)
		}
		if start.After(until) {
			break
		}
		for _, d := range days[i:j] {
			st.ApplyDay(d)
		}
		at := start.UnixMilli()
		if h.first == 0 {
			h.first = at
		}
		snap := st.Snapshot()
		for k, v := range snap.DailyUSD {
			record(WorkspaceDailyUsageMetric, "model", k, v, at)
		}
		for k, v := range snap.Lines {
			record(WorkspaceLinesMetric, "kind", k, float64(v), at)
		}
		i = j
	}
	for _, s := range byKey {
		h.series = append(h.series, *s)
	}
	slices.SortFunc(h.series, func(a, b WorkspaceSeries) int {
		if c := strings.Compare(a.Metric, b.Metric); c != 0 {
			return c
		}
		return slices.CompareFunc(a.Labels, b.Labels, func(x, y Label) int {
			return cmp.Or(strings.Compare(x.Name, y.Name), strings.Compare(x.Value, y.Value))
		})
	})
	return h, nil
}

// First is the start of the history's first day, the zero time when it
// has none.
func (h *WorkspaceHistory) First() time.Time {
	if h == nil || h.first == 0 {
		return time.Time{}
	}
	return time.UnixMilli(h.first).UTC()
}

// Series returns the history's series, each with a sample at every time
// of times from its first growth on (growth before the first time is in
// the first sample), as Backfill.Series does.
func (h *WorkspaceHistory) Series(times []int64) []WorkspaceSeries {
	if h == nil {
		return nil
	}
	out := make([]WorkspaceSeries, 0, len(h.series))
	for _, s := range h.series {
		if len(s.growth) == 0 {
			continue
		}
		first, _ := slices.BinarySearch(times, s.growth[0].T)
		if first == len(times) {
			continue
		}
		s.Times = times[first:]
		out = append(out, s)
	}
	return out
}

// WorkspaceSamples is the number of samples the series hold.
func WorkspaceSamples(series []WorkspaceSeries) int64 {
	var n int64
	for i := range series {
		n += int64(len(series[i].Times))
	}
	return n
}

// writeWorkspace writes the workspace's series, family by family.
func writeWorkspace(bw *bufio.Writer, series []WorkspaceSeries, target []Label) (int64, error) {
	var n int64
	var line []byte
	for i := range series {
		s := &series[i]
		name := strings.TrimSuffix(s.Metric, "_total")
		if i == 0 || s.Metric != series[i-1].Metric {
			fmt.Fprintf(bw, "# HELP %s %s\n# TYPE %s counter\n", name, escapeHelp(workspaceHelp[s.Metric]), name)
		}
		ls := append(slices.Clone(target), s.Labels...)
		slices.SortFunc(ls, func(a, b Label) int { return strings.Compare(a.Name, b.Name) })
		prefix := append(appendSeries(nil, s.Metric, ls), ' ')
		j, v := 0, 0.0
		for _, t := range s.Times {
			for j < len(s.growth) && s.growth[j].T <= t {
				v = s.growth[j].V
				j++
			}
			line = append(line[:0], prefix...)
			line = strconv.AppendFloat(line, v, 'g', -1, 64)
			line = append(line, ' ')
			line = appendSeconds(line, t)
			line = append(line, '\n')
			if _, err := bw.Write(line); err != nil {
				return n, fmt.Errorf("writing openmetrics: %w", err)
			}
			n++
		}
	}
	return n, nil
}
