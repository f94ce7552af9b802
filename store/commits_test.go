package store

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/amp-exporter/amp-exporter/parser/streamjson"
	"github.com/amp-exporter/amp-exporter/parser/thread"
)

// A shell call's commits, pull requests and pushes count when its result
// is done, under the status it was first counted with: a rewrite that
// turns it into an error takes nothing back, and a call first counted
// cancelled never counts what it did.
func TestCounterCommitsAndPullRequests(t *testing.T) {
	s := NewThreadStore(StoreOptions{})
	items := []thread.Item{
		{Key: toolKey(1), Tool: "Bash", Status: "done", Shell: thread.ShellSuccess, Commits: 2, PullRequests: 1, Pushes: 1, FailedPushes: 1},
		{Key: toolKey(2), Tool: "Bash", Status: "cancelled", Shell: thread.ShellStopped, Commits: 5, PullRequests: 5, Pushes: 5},
	}
	k := counterFor(s, nil, nil, items...)
	res := k.count(false)
	want := map[SeriesKey]int64{
		{FamCommits, "", "", ""}:                2,
		{FamPullRequests, "", "", ""}:           1,
		{FamPushes, thread.PushSuccess, "", ""}: 1,
		{FamPushes, thread.PushFailure, "", ""}: 1,
	}
	check := func(when string, got contribution) {
		t.Helper()
		for sk, v := range want {
			if got[sk] != v {
				t.Errorf("%s: %v = %d, want %d", when, sk, got[sk], v)
			}
		}
		for sk, v := range got {
			if _, ok := want[sk]; !ok && (sk.Fam == FamCommits || sk.Fam == FamPullRequests || sk.Fam == FamPushes) {
				t.Errorf("%s: %v = %d, want none", when, sk, v)
			}
		}
	}
	check("first count", res.series)
	items[0].Status, items[1].Status = "error", "done"
	k = counterFor(s, nil, res.pins, items...)
	check("after a rewrite", k.count(false).series)
}

// shipThread is a thread in a repository whose agent committed, pushed
// and opened a pull request in one call, and committed again in another
// when grown.
func shipThread(grown bool) string {
	msgs := []string{userMsg(0, "ship it"),
		`{"role":"assistant","messageId":1,"content":[{"type":"tool_use","id":"tu1","name":"Bash","complete":true,"input":{"cmd":"git add -A && git commit -m \"Fix it\" && git push && gh pr create --fill"}}],"state":` + stToolUse + `}`,
		`{"role":"user","messageId":2,"content":[{"type":"tool_result","toolUseID":"tu1","run":{"status":"done","result":{"output":"[fix 1a2b3c4] Fix it\n 1 file changed\nTo github.com:acme/web.git\n * [new branch] fix -> fix\nhttps://github.com/acme/web/pull/9\n","exitCode":0}}}]}`,
	}
	if grown {
		msgs = append(msgs,
			`{"role":"assistant","messageId":3,"content":[{"type":"tool_use","id":"tu2","name":"shell_command","complete":true,"input":{"command":"git commit -am \"And the test\""}}],"state":`+stToolUse+`}`,
			`{"role":"user","messageId":4,"content":[{"type":"tool_result","toolUseID":"tu2","run":{"status":"done","result":{"output":"[fix 5d6e7f8] And the test\n","exitCode":0}}}]}`)
	}
	return threadDoc("T-1", envOf("git@github.com:acme/web.git"), msgs...)
}

// Commits and pull requests are counted once per call and per thread's
// repository however often the thread is read, rewritten or restored
// after a restart (whole state or deltas).
func TestCommitsCountOnceThroughRewritesAndRestarts(t *testing.T) {
	const web = "github.com/acme/web"
	for _, restore := range []string{"whole state", "deltas"} {
		t.Run(restore, func(t *testing.T) {
			s := repoStore(0, unreadable{})
			for range 2 {
				s.Apply("/d/T-1.json", FileVersion{}, summaryOf(t, shipThread(false)))
			}
			var r *ThreadStore
			switch restore {
			case "whole state":
				data, err := json.Marshal(s.Export())
				if err != nil {
					t.Fatal(err)
				}
				var st State
				if err := json.Unmarshal(data, &st); err != nil {
					t.Fatal(err)
				}
				r = repoStore(0, unreadable{})
				if err := r.Import(&st); err != nil {
					t.Fatal(err)
				}
			case "deltas":
				rp := &replay{threads: map[string]ThreadState{}, files: map[string]FileRecord{}}
				rp.add(t, s.ExportDelta())
				r = rp.restore(t)
				r.repos = NewRepositories(nil)
			}
			for range 2 {
				r.Apply("/d/T-1.json", FileVersion{Size: 1}, summaryOf(t, shipThread(true)))
				r.Apply("/d/copy-of-T-1.json", FileVersion{Size: 2}, summaryOf(t, shipThread(true)))
			}
			got := map[SeriesKey]int64{}
			for k, v := range r.Snapshot().totals {
				if k.Fam == FamCommits || k.Fam == FamPullRequests || k.Fam == FamPushes {
					got[k] = v
				}
			}
			want := map[SeriesKey]int64{
				{FamCommits, "", "", web}:                2,
				{FamPullRequests, "", "", web}:           1,
				{FamPushes, thread.PushSuccess, "", web}: 1,
			}
			if fmt.Sprint(got) != fmt.Sprint(want) {
				t.Errorf("after the restart %v, want %v", got, want)
			}
		})
	}
}

// A stream-json line's commits, pull requests and pushes count in the
// stream store, and survive its state's round trip.
func TestStreamCommits(t *testing.T) {
	s := NewStreamStore(NewLabelCap(10, nil), nil)
	s.Apply([]streamjson.Increments{{UserMessages: 1, Commits: 2, PullRequests: 1, Pushes: 1, FailedPushes: 3}})
	data, err := json.Marshal(s.Export())
	if err != nil {
		t.Fatal(err)
	}
	var st StreamState
	if err := json.Unmarshal(data, &st); err != nil {
		t.Fatal(err)
	}
	r := NewStreamStore(NewLabelCap(10, nil), nil)
	if err := r.Import(&st); err != nil {
		t.Fatal(err)
	}
	want := map[SeriesKey]int64{
		{FamCommits, "", "", ""}:                2,
		{FamPullRequests, "", "", ""}:           1,
		{FamPushes, thread.PushSuccess, "", ""}: 1,
		{FamPushes, thread.PushFailure, "", ""}: 3,
	}
	for k, v := range want {
		if got := r.Snapshot().totals[k]; got != v {
			t.Errorf("%v = %d, want %d", k, got, v)
		}
	}
}
