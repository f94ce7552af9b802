package thread

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/amp-exporter/amp-exporter/internal/testsupport/threadgen"
)

// Outputs as git and the forges' CLIs print them.
const (
	tCommitOut = "[main 1a2b3c4] Add the parser\n 2 files changed, 40 insertions(+), 3 deletions(-)\n"
	tPushOut   = "To github.com:acme/web.git\n   1a2b3c4..5d6e7f8  main -> main\n"
	tRejected  = "To github.com:acme/web.git\n ! [rejected]        main -> main (fetch first)\nerror: failed to push some refs to 'github.com:acme/web.git'\n"
	tGhOut     = "\nCreating pull request for fix into main in acme/web\n\nhttps://github.com/acme/web/pull/123\n"
	tGhExists  = "a pull request for branch \"fix\" into branch \"main\" already exists:\nhttps://github.com/acme/web/pull/123\n"
)

// shellTotals adds up what the summary's items say the shell calls did.
func shellTotals(t *testing.T, data []byte) (commits, prs, pushes, failed int64) {
	t.Helper()
	th, err := NewParser().ParseBytes(data)
	if err != nil {
		t.Fatal(err)
	}
	for _, it := range Summarize(th).Items {
		commits += int64(it.Commits)
		prs += int64(it.PullRequests)
		pushes += int64(it.Pushes)
		failed += int64(it.FailedPushes)
	}
	return commits, prs, pushes, failed
}

func bash(cmd string) map[string]any { return map[string]any{"cmd": cmd, "cwd": "/src/web"} }
func shellCmd(cmd string) map[string]any {
	return map[string]any{"command": cmd, "workdir": "/src/web"}
}
func out(output string, exit int) map[string]any {
	return map[string]any{"output": output, "exitCode": exit}
}

// TestCommitsOfShellCalls: each call's count is worked out by hand from
// the rules of docs/counting.md, the reason beside it.
func TestCommitsOfShellCalls(t *testing.T) {
	tests := []struct {
		name                         string
		calls                        []call
		commits, prs, pushes, failed int64
	}{
		{"a commit", []call{{"Bash", bash(`git commit -m "x"`), "done", out(tCommitOut, 0)}}, 1, 0, 0, 0},
		{"shell_command's spelling", []call{{"shell_command", shellCmd(`git commit -am x`), "done", out(tCommitOut, 0)}}, 1, 0, 0, 0},
		{"chained, -C", []call{{"Bash", bash(`git add -A && git -C web commit -m x`), "done", out(tCommitOut, 0)}}, 1, 0, 0, 0},
		{"failed", []call{{"Bash", bash(`git commit -m x`), "done", out(tCommitOut, 1)}}, 0, 0, 0, 0},
		{"no exit code", []call{{"Bash", bash(`git commit -m x`), "done", map[string]any{"output": tCommitOut}}}, 0, 0, 0, 0},
		{"amend", []call{{"Bash", bash(`git commit --amend --no-edit`), "done", out(tCommitOut, 0)}}, 0, 0, 0, 0},
		{"dry run", []call{{"Bash", bash(`git commit --dry-run -m x`), "done", out(tCommitOut, 0)}}, 0, 0, 0, 0},
		{"in a string", []call{{"Bash", bash(`echo "git commit -m x"`), "done", out(tCommitOut, 0)}}, 0, 0, 0, 0},
		{"cancelled", []call{{"Bash", bash(`git commit -m x`), "cancelled", out(tCommitOut, 0)}}, 0, 0, 0, 0},
		{"not a shell tool", []call{{"Read", bash(`git commit -m x`), "done", out(tCommitOut, 0)}}, 0, 0, 0, 0},
		{"a pull request", []call{{"Bash", bash(`gh pr create --fill`), "done", out(tGhOut, 0)}}, 0, 1, 0, 0},
		{"one that exists", []call{{"Bash", bash(`gh pr create --fill`), "done", out(tGhExists, 1)}}, 0, 0, 0, 0},
		{"ship it", []call{
			{"Bash", bash(`git commit -m x && git push && gh pr create --fill`), "done", out(tCommitOut+tPushOut+tGhOut, 0)},
			{"Bash", bash(`git push other main`), "done", out(tRejected, 1)},
			{"Bash", bash(`go test ./...`), "done", out("ok\n", 0)},
		}, 1, 1, 1, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, p, u, f := shellTotals(t, editThread(t, tt.calls))
			if c != tt.commits || p != tt.prs || u != tt.pushes || f != tt.failed {
				t.Errorf("commits, prs, pushes, failed = %d %d %d %d, want %d %d %d %d", c, p, u, f, tt.commits, tt.prs, tt.pushes, tt.failed)
			}
		})
	}
}

// TestCommitsResultBeforeUse: a result read before its tool_use (the
// blocks out of order) has its output read in case, and counts the same.
func TestCommitsResultBeforeUse(t *testing.T) {
	msgs := []any{
		map[string]any{"role": "user", "messageId": 0, "content": []any{map[string]any{"type": "tool_result", "toolUseID": "toolu_1",
			"run": map[string]any{"status": "done", "result": out(tCommitOut+tGhOut, 0)}}}},
		map[string]any{"role": "assistant", "messageId": 1, "content": []any{map[string]any{"type": "tool_use", "id": "toolu_1", "name": "Bash",
			"input": bash(`git commit -m x; gh pr create --fill`)}}, "state": map[string]any{"type": "complete", "stopReason": "tool_use"}},
	}
	b, err := json.Marshal(map[string]any{"v": 1, "id": "T-order", "created": 1, "messages": msgs})
	if err != nil {
		t.Fatal(err)
	}
	if c, p, _, _ := shellTotals(t, b); c != 1 || p != 1 {
		t.Errorf("commits, prs = %d %d, want 1 1", c, p)
	}
}

// TestCommitsOfGeneratedThreads: the generator's corpus of every era with
// shell calls of every case (threadgen's Options.Commits) reads as the
// commits, pull requests and pushes the generator knows it wrote, per
// repository.
func TestCommitsOfGeneratedThreads(t *testing.T) {
	g := threadgen.New(threadgen.Options{Threads: 80, TotalBytes: 80 * 60_000, Seed: 37, Repositories: 3, Commits: true,
		Start: time.Date(2026, 1, 5, 9, 0, 0, 0, time.UTC), Span: 100 * 24 * time.Hour})
	type counts struct{ commits, prs, pushed, failed int64 }
	got, want := map[string]counts{}, map[string]counts{}
	p := NewParser()
	for i := range g.Len() {
		_, data := g.Thread(i)
		th, err := p.ParseBytes(data)
		if err != nil {
			t.Fatal(err)
		}
		s := SummarizeItems(th)
		c := got[g.Repository(i)]
		for _, it := range s.Items {
			if it.Copied {
				continue
			}
			c.commits += int64(it.Commits)
			c.prs += int64(it.PullRequests)
			c.pushed += int64(it.Pushes)
			c.failed += int64(it.FailedPushes)
		}
		got[g.Repository(i)] = c
	}
	for repo, ch := range g.Changes() {
		want[repo] = counts{ch.VCS.Commits, ch.VCS.PullRequests, ch.VCS.Pushes[threadgen.PushSuccess], ch.VCS.Pushes[threadgen.PushFailure]}
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("per repository (commits, pull requests, pushes, failed pushes)\n got  %v\n want %v", got, want)
	}
	total := counts{}
	for _, c := range want {
		total.commits, total.prs, total.failed = total.commits+c.commits, total.prs+c.prs, total.failed+c.failed
	}
	if total.commits == 0 || total.prs == 0 || total.failed == 0 {
		t.Errorf("the corpus commits, opens and fails too little to tell: %+v", total)
	}
}
