package store

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"
)

func wsUsage(id string, usd float64, models ...WorkspaceModel) WorkspaceUsage {
	return WorkspaceUsage{ID: id, User: "user-1", Repository: "https://x-access-token:ghs_SECRET@github.com/acme/app.git", USD: usd, Models: models}
}

func wsM(name string, in, out uint64, usd float64) WorkspaceModel {
	return WorkspaceModel{Model: name, Tokens: [4]uint64{in, out, 0, 0}, USD: usd}
}

// TestWorkspaceGrowth: a thread's usage is counted by its growth over the
// high mark; a decrease is a restatement, never subtracted, and what
// follows it counts only past the old mark.
func TestWorkspaceGrowth(t *testing.T) {
	type want struct {
		input, output uint64
		cost, billed  float64
		restatements  uint64
	}
	for _, tc := range []struct {
		name  string
		steps []WorkspaceUsage
		want  want
	}{
		{"one answer", []WorkspaceUsage{wsUsage("t", 1.5, wsM("m", 10, 20, 1.5))}, want{10, 20, 1.5, 1.5, 0}},
		{"the same answer twice", []WorkspaceUsage{
			wsUsage("t", 1.5, wsM("m", 10, 20, 1.5)),
			wsUsage("t", 1.5, wsM("m", 10, 20, 1.5)),
		}, want{10, 20, 1.5, 1.5, 0}},
		{"growth", []WorkspaceUsage{
			wsUsage("t", 1.5, wsM("m", 10, 20, 1.5)),
			wsUsage("t", 2.25, wsM("m", 15, 40, 2.25)),
		}, want{15, 40, 2.25, 2.25, 0}},
		{"a decrease is a restatement", []WorkspaceUsage{
			wsUsage("t", 2, wsM("m", 10, 20, 2)),
			wsUsage("t", 1, wsM("m", 5, 20, 1)),
		}, want{10, 20, 2, 2, 1}},
		{"growth after a decrease counts past the old mark", []WorkspaceUsage{
			wsUsage("t", 2, wsM("m", 10, 20, 2)),
			wsUsage("t", 1, wsM("m", 5, 20, 1)),
			wsUsage("t", 3, wsM("m", 12, 20, 3)),
		}, want{12, 20, 3, 3, 1}},
		{"a model gone is a restatement", []WorkspaceUsage{
			wsUsage("t", 2, wsM("m", 10, 20, 2)),
			wsUsage("t", 2),
		}, want{10, 20, 2, 2, 1}},
		{"two threads", []WorkspaceUsage{
			wsUsage("t", 2, wsM("m", 10, 20, 2)),
			wsUsage("u", 0.5, wsM("m", 1, 2, 0.5)),
		}, want{11, 22, 2.5, 2.5, 0}},
		{"NaN and negative dollars count nothing", []WorkspaceUsage{
			wsUsage("t", -1, wsM("m", 1, 1, -1)),
		}, want{1, 1, 0, 0, 0}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := NewWorkspaceStore(nil, NewRepositories(nil))
			for _, u := range tc.steps {
				s.ApplyUsage(u)
			}
			snap := s.Snapshot()
			var got want
			for k, v := range snap.Tokens {
				switch k.L2 {
				case "input":
					got.input += v
				case "output":
					got.output += v
				}
			}
			for _, v := range snap.Cost {
				got.cost += v
			}
			for _, v := range snap.Billed {
				got.billed += v
			}
			got.restatements = snap.Restatements[WorkspaceEndpointUsage]
			if got != tc.want {
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
			for k := range snap.Cost {
				if k.Repo != "github.com/acme/app" || k.User != "user-1" {
					t.Errorf("labels %+v, want the remote without its credentials and the user", k)
				}
			}
		})
	}
}

// TestWorkspaceDays: a member's day counts its growth per model and its
// lines; a restated day's decrease is a restatement.
func TestWorkspaceDays(t *testing.T) {
	s := NewWorkspaceStore(nil, nil)
	day := func(usd float64, added uint64) WorkspaceDay {
		return WorkspaceDay{Day: "2026-12-01", User: "u1", Added: added, Deleted: 1, Models: map[string]float64{"m": usd}}
	}
	if g := s.ApplyDay(day(1, 10)); g["m"] != 1 {
		t.Errorf("first read grew %v, want 1", g)
	}
	if g := s.ApplyDay(day(1, 10)); len(g) != 0 {
		t.Errorf("same day again grew %v", g)
	}
	if g := s.ApplyDay(day(1.5, 12)); g["m"] != 0.5 {
		t.Errorf("today growing grew %v, want 0.5", g)
	}
	s.ApplyDay(day(1.25, 12))
	snap := s.Snapshot()
	if v := snap.DailyUSD[WSKey{L1: "m", User: "u1"}]; v != 1.5 {
		t.Errorf("daily usd %v, want 1.5", v)
	}
	if v := snap.Lines[WSKey{L1: "added", User: "u1"}]; v != 12 {
		t.Errorf("lines added %v, want 12", v)
	}
	if v := snap.Restatements[WorkspaceEndpointDaily]; v != 1 {
		t.Errorf("restatements %v, want 1", v)
	}
	s.DropDaysBefore("2026-12-02")
	if g := s.ApplyDay(day(2, 12)); g["m"] != 2 {
		t.Errorf("a dropped day read again counts again (%v): the source must not read it", g)
	}
}

// TestWorkspaceLabelsCapped: user, model and repository values past
// limits.max_label_values fold into "other".
func TestWorkspaceLabelsCapped(t *testing.T) {
	s := NewWorkspaceStore(NewLabelCap(2, nil), NewRepositories(nil))
	for i := range 5 {
		s.ApplyUsage(WorkspaceUsage{ID: fmt.Sprint(i), User: fmt.Sprint("user-", i),
			Repository: fmt.Sprintf("https://github.com/acme/r%d", i), USD: 1,
			Models: []WorkspaceModel{wsM(fmt.Sprint("model-", i), 1, 1, 1)}})
	}
	users, repos, models := map[string]bool{}, map[string]bool{}, map[string]bool{}
	var total float64
	for k, v := range s.Snapshot().Cost {
		users[k.User], repos[k.Repo], models[k.L1] = true, true, true
		total += v
	}
	for name, set := range map[string]map[string]bool{"user": users, "repository": repos, "model": models} {
		if len(set) != 3 || !set[OtherValue] {
			t.Errorf("%s values %v, want two and other", name, set)
		}
	}
	if total != 5 {
		t.Errorf("total %v, want 5", total)
	}
}

// TestWorkspaceUserLabel: id, e-mail (when the rollup named it) or off.
func TestWorkspaceUserLabel(t *testing.T) {
	for _, tc := range []struct{ mode, want string }{{UserLabelID, "user-1"}, {UserLabelEmail, "a@example.com"}, {UserLabelOff, ""}} {
		s := NewWorkspaceStore(nil, nil)
		s.SetUserLabel(tc.mode)
		s.SetEmail("user-1", "a@example.com")
		s.ApplyUsage(wsUsage("t", 1, wsM("m", 1, 1, 1)))
		for k := range s.Snapshot().Billed {
			if k.User != tc.want {
				t.Errorf("%s: user %q, want %q", tc.mode, k.User, tc.want)
			}
		}
	}
}

// TestWorkspaceExportImport: what a store counted comes back whole, and
// a thread counted before is not counted again.
func TestWorkspaceExportImport(t *testing.T) {
	s := NewWorkspaceStore(nil, NewRepositories(nil))
	at := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	u := wsUsage("t", 2, wsM("m", 10, 20, 2))
	u.Updated = at
	s.ApplyUsage(u)
	s.Skip("gone", WorkspaceSkipPastWindow, at)
	s.ApplyDay(WorkspaceDay{Day: "2026-12-01", User: "u1", Added: 3, Models: map[string]float64{"m": 1}})
	s.SetLastDay(at)
	b, err := json.Marshal(s.Export())
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(b), "SECRET") {
		t.Errorf("state holds the remote's credentials: %s", b)
	}
	var st WorkspaceState
	if err := json.Unmarshal(b, &st); err != nil {
		t.Fatal(err)
	}
	r := NewWorkspaceStore(nil, NewRepositories(nil))
	r.Import(st)
	if !r.Counted("t", at) || !r.Counted("gone", at.Add(time.Hour)) || r.Counted("t", at.Add(time.Minute)) {
		t.Error("Counted after import is wrong")
	}
	// A thread not found is asked again only once it changed.
	r.Skip("missing", WorkspaceSkipNotFound, at)
	if !r.Counted("missing", at) || !r.Counted("missing", time.Time{}) || r.Counted("missing", at.Add(time.Minute)) {
		t.Error("Counted of a thread not found is wrong")
	}
	if r.Skip("missing", WorkspaceSkipNotFound, at.Add(time.Minute)) || !r.Counted("missing", at.Add(time.Minute)) {
		t.Error("a thread not found again is counted as a new skip, or asked again")
	}
	r.ApplyUsage(u)
	if got, want := fmt.Sprint(r.Snapshot()), fmt.Sprint(s.Snapshot()); got != want {
		t.Errorf("after import and the same answer:\n%s\nwant\n%s", got, want)
	}
	if d, ok := r.LastDay(); !ok || !d.Equal(at) {
		t.Errorf("last day %v %v", d, ok)
	}
}
