package store

import (
	"time"

	"encoding/json"
	"fmt"
	"github.com/amp-exporter/amp-exporter/internal/testsupport/threadgen"
	"testing"

	"github.com/amp-exporter/amp-exporter/parser/streamjson"
	"github.com/amp-exporter/amp-exporter/parser/thread"
)

// The commits and pull requests by model are those of the same calls as
// FamCommits and FamPullRequests, under the model of the assistant message
// that made the call, folded by the label cap; a call first counted
// unfinished counts nothing, a rewrite does not move the model (pinned with
// the call), and a call pinned before they were counted by model gets its
// model once.
func TestCounterCommitsByModel(t *testing.T) {
	s := NewThreadStore(StoreOptions{MaxLabelValues: 3})
	items := []thread.Item{
		{Key: toolKey(1), Tool: "Bash", Status: "done", Shell: thread.ShellSuccess, Commits: 2, PullRequests: 1, Model: "opus"},
		{Key: toolKey(2), Tool: "Bash", Status: "done", Shell: thread.ShellSuccess, Commits: 1, Model: "sonnet"},
		{Key: toolKey(3), Tool: "Bash", Status: "cancelled", Shell: thread.ShellStopped, Commits: 5, PullRequests: 5, Model: "opus"},
		// No model named: unknown, as a message naming none.
		{Key: toolKey(4), Tool: "Bash", Status: "done", Shell: thread.ShellSuccess, PullRequests: 1},
		// A fourth model past the cap of three: folded.
		{Key: toolKey(5), Tool: "Bash", Status: "done", Shell: thread.ShellSuccess, Commits: 4, Model: "gpt"},
		// A shell call that committed nothing.
		{Key: toolKey(6), Tool: "Bash", Status: "done", Shell: thread.ShellSuccess, Model: "haiku"},
	}
	want := map[SeriesKey]int64{
		{FamCommitsByModel, "opus", "", ""}:                   2,
		{FamPullRequestsByModel, "opus", "", ""}:              1,
		{FamCommitsByModel, "sonnet", "", ""}:                 1,
		{FamPullRequestsByModel, thread.UnknownModel, "", ""}: 1,
		{FamCommitsByModel, OtherValue, "", ""}:               4,
	}
	k := counterFor(s, nil, nil, items...)
	res := k.count(false)
	checkCommitsByModel(t, "first count", res.series, want)
	items[0].Status, items[0].Model, items[2].Status = "error", "sonnet", "done"
	k = counterFor(s, nil, res.pins, items...)
	res = k.count(false)
	checkCommitsByModel(t, "after a rewrite", res.series, want)

	// A shell call pinned (done) by a version that kept no model in its
	// pin gets its model once.
	k = counterFor(s, nil, nil)
	k.pg.pin(&s.tuples, toolKey(1), pinTuple{name: "Bash", outcome: "done"})
	old := k.pg.result()
	k = counterFor(s, nil, old, items[0])
	res = k.count(false)
	checkCommitsByModel(t, "an old pin", res.series, map[SeriesKey]int64{
		{FamCommitsByModel, "sonnet", "", ""}:      2,
		{FamPullRequestsByModel, "sonnet", "", ""}: 1,
	})
}

// checkCommitsByModel compares the by-model commit and pull request series
// of got with want, and checks they sum to the per-repository families.
func checkCommitsByModel(t *testing.T, when string, got contribution, want map[SeriesKey]int64) {
	t.Helper()
	gotBy := map[SeriesKey]int64{}
	var sums [4]int64
	for sk, v := range got {
		switch sk.Fam {
		case FamCommitsByModel:
			sums[0] += v
		case FamPullRequestsByModel:
			sums[1] += v
		case FamCommits:
			sums[2] += v
			continue
		case FamPullRequests:
			sums[3] += v
			continue
		default:
			continue
		}
		if v != 0 {
			gotBy[sk] = v
		}
	}
	if fmt.Sprint(gotBy) != fmt.Sprint(want) {
		t.Errorf("%s: by model %v, want %v", when, gotBy, want)
	}
	if sums[0] != sums[2] || sums[1] != sums[3] {
		t.Errorf("%s: by model %d commits, %d pull requests; per repository %d, %d", when, sums[0], sums[1], sums[2], sums[3])
	}
}

// shipThreadByModels is shipThread with the model of each call's message:
// opus commits, pushes and opens the pull request, sonnet commits again
// when the thread has grown.
func shipThreadByModels(grown bool) string {
	msgs := []string{userMsg(0, "ship it"),
		`{"role":"assistant","messageId":1,"content":[{"type":"tool_use","id":"tu1","name":"Bash","complete":true,"input":{"cmd":"git add -A && git commit -m \"Fix it\" && git push && gh pr create --fill"}}],"state":` + stToolUse + `,"usage":` + usageOf("claude-opus-4-6", 10, 100) + `}`,
		`{"role":"user","messageId":2,"content":[{"type":"tool_result","toolUseID":"tu1","run":{"status":"done","result":{"output":"[fix 1a2b3c4] Fix it\n 1 file changed\nTo github.com:acme/web.git\n * [new branch] fix -> fix\nhttps://github.com/acme/web/pull/9\n","exitCode":0}}}]}`,
	}
	if grown {
		msgs = append(msgs,
			`{"role":"assistant","messageId":3,"content":[{"type":"tool_use","id":"tu2","name":"shell_command","complete":true,"input":{"command":"git commit -am \"And the test\""}}],"state":`+stToolUse+`,"usage":`+usageOf("claude-sonnet-4-5-20250929", 10, 100)+`}`,
			`{"role":"user","messageId":4,"content":[{"type":"tool_result","toolUseID":"tu2","run":{"status":"done","result":{"output":"[fix 5d6e7f8] And the test\n","exitCode":0}}}]}`)
	}
	return threadDoc("T-1", envOf("git@github.com:acme/web.git"), msgs...)
}

// Read from a thread file, the commits count under the model of the
// message that made the call, once however often the thread is read,
// rewritten or restored after a restart (whole state or deltas), and sum
// to the per-repository counts.
func TestCommitsByModelThroughRewritesAndRestarts(t *testing.T) {
	const opus, sonnet = "claude-opus-4-6", "claude-sonnet-4-5-20250929"
	for _, restore := range []string{"whole state", "deltas"} {
		t.Run(restore, func(t *testing.T) {
			s := repoStore(0, unreadable{})
			for range 2 {
				s.Apply("/d/T-1.json", FileVersion{}, summaryOf(t, shipThreadByModels(false)))
			}
			checkCommitsByModel(t, "first read", contribution(s.Snapshot().totals), map[SeriesKey]int64{
				{FamCommitsByModel, opus, "", ""}:      1,
				{FamPullRequestsByModel, opus, "", ""}: 1,
			})
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
				r.Apply("/d/T-1.json", FileVersion{Size: 1}, summaryOf(t, shipThreadByModels(true)))
				r.Apply("/d/copy-of-T-1.json", FileVersion{Size: 2}, summaryOf(t, shipThreadByModels(true)))
			}
			checkCommitsByModel(t, "after the restart", contribution(r.Snapshot().totals), map[SeriesKey]int64{
				{FamCommitsByModel, opus, "", ""}:      1,
				{FamPullRequestsByModel, opus, "", ""}: 1,
				{FamCommitsByModel, sonnet, "", ""}:    1,
			})
		})
	}
}

// A stream-json line's commits and pull requests count under its run's
// model, unknown when the run names none, and survive the state's round
// trip.
func TestStreamCommitsByModel(t *testing.T) {
	s := NewStreamStore(NewLabelCap(10, nil), nil)
	s.Apply([]streamjson.Increments{
		{UserMessages: 1, ShipModel: "claude-opus-4-6", Commits: 2, PullRequests: 1},
		{UserMessages: 1, Commits: 1},
	})
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
	checkCommitsByModel(t, "stream", contribution(r.Snapshot().totals), map[SeriesKey]int64{
		{FamCommitsByModel, "claude-opus-4-6", "", ""}:      2,
		{FamPullRequestsByModel, "claude-opus-4-6", "", ""}: 1,
		{FamCommitsByModel, thread.UnknownModel, "", ""}:    1,
	})
}

// Over threadgen's corpus with every commit case (in three repositories and
// none, by the generator's models), the commits and pull requests by model
// are those the generator wrote for each model, and sum to the
// per-repository counts.
func TestCommitsByModelOverThreadgen(t *testing.T) {
	g := threadgen.New(threadgen.Options{Threads: 80, TotalBytes: 80 * 30_000, Seed: 31, Repositories: 3, Commits: true,
		Start: time.Date(2026, 2, 2, 9, 0, 0, 0, time.UTC)})
	s := newTestStore(0)
	p := thread.NewParser()
	for i := range g.Len() {
		name, data := g.Thread(i)
		th, err := p.ParseBytes(data)
		if err != nil {
			t.Fatal(err)
		}
		s.Apply("/d/"+name, FileVersion{Size: int64(len(data))}, thread.Summarize(th))
	}
	want := map[SeriesKey]int64{}
	for _, c := range g.Changes() {
		for m, v := range c.VCS.CommitsByModel {
			want[SeriesKey{Fam: FamCommitsByModel, L1: m}] += v
		}
		for m, v := range c.VCS.PullRequestsByModel {
			want[SeriesKey{Fam: FamPullRequestsByModel, L1: m}] += v
		}
	}
	models := map[string]bool{}
	for k := range want {
		models[k.L1] = true
	}
	if len(models) < 2 {
		t.Fatalf("the corpus commits under too few models to compare: %v", want)
	}
	checkCommitsByModel(t, "threadgen", contribution(s.Snapshot().totals), want)
}
