package threadgen

import "strings"

// Shell calls that commit, push and open pull requests (Options.Commits).
//
// Some Bash and shell_command calls run one of the cases below instead of
// an everyday command: each case is a command as an agent writes it, the
// output git or a forge's CLI prints for it and the exit code, with what
// the call did worked out by hand (docs/counting.md, "Commits and pull
// requests"). The generator tallies what a case did when its run is done
// (a cancelled, failed or rejected run did nothing the exporter counts),
// so Changes knows the commits, pull requests and pushes of every
// repository without reading a thread back.

// Push outcomes, as amp_pushes_total labels them.
const (
	PushSuccess = "success"
	PushFailure = "failure"
)

// vcsCase is one shell call that can commit, push or open a request.
type vcsCase struct {
	name, command, output string
	exit                  int64
	commits, prs          int64
	pushes, failedPushes  int64
}

// Outputs as git and the forges' CLIs print them.
const (
	outCommit      = "[main 1a2b3c4] Fix the retry loop\n 2 files changed, 40 insertions(+), 3 deletions(-)\n"
	outCommitFix   = "[fix/retry 9f8e7d6] Add the regression test\n 1 file changed, 12 insertions(+)\n create mode 100644 internal/retry/retry_test.go\n"
	outPush        = "To github.com:acme/web.git\n   1a2b3c4..5d6e7f8  main -> main\n"
	outPushNew     = "remote: \nremote: Create a pull request for 'fix/retry' on GitHub by visiting:\nremote:      https://github.com/acme/web/pull/new/fix/retry\nremote: \nTo github.com:acme/web.git\n * [new branch]      fix/retry -> fix/retry\nbranch 'fix/retry' set up to track 'origin/fix/retry'.\n"
	outRejected    = "To github.com:acme/web.git\n ! [rejected]        main -> main (fetch first)\nerror: failed to push some refs to 'github.com:acme/web.git'\nhint: Updates were rejected because the remote contains work that you do not\n"
	outGhPR        = "\nCreating pull request for fix/retry into main in acme/web\n\nhttps://github.com/acme/web/pull/123\n"
	outGhExists    = "a pull request for branch \"fix/retry\" into branch \"main\" already exists:\nhttps://github.com/acme/web/pull/123\n"
	outGlabMR      = "\nCreating merge request for fix/retry into main in acme/platform/web\n\n!42 Fix the retry loop (fix/retry)\n https://gitlab.com/acme/platform/web/-/merge_requests/42\n\n"
	outHubPR       = "https://github.example.com/acme/web/pull/7\n"
	outNothing     = "On branch main\nnothing to commit, working tree clean\n"
	outHookFailed  = "golangci-lint............................................................Failed\n- hook id: golangci-lint\n- exit code: 1\n"
	outAmend       = "[main 5d6e7f8] Fix the retry loop\n Date: Mon Feb 2 09:12:44 2026 +0000\n 2 files changed, 41 insertions(+), 3 deletions(-)\n"
	outDryRun      = "On branch main\nChanges to be committed:\n\tmodified:   internal/retry/retry.go\n"
	outUpToDate    = "Everything up-to-date\n"
	outTestsFailed = "--- FAIL: TestRetry (0.01s)\nFAIL\nFAIL\tgithub.com/acme/web/internal/retry\t0.412s\n"
)

// vcsCases are every case the issue names and a few more: successful
// commits (alone, chained with &&, -a, -C dir, a heredoc message), ones
// that do not count (failed, a failed hook, nothing to commit, a dry run,
// in a string, --amend, a chain whose later step failed), pull and merge
// requests of gh, glab and hub (and one that already exists), and pushes
// that reached the remote or were rejected.
var vcsCases = []vcsCase{
	{"commit", `git commit -m "Fix the retry loop"`, outCommit, 0, 1, 0, 0, 0},
	{"chained commit and push", `git add -A && git commit -m "Fix the retry loop" && git push`, outCommit + outPush, 0, 1, 0, 1, 0},
	{"commit -a", `git commit -am "Fix the retry loop"`, outCommit, 0, 1, 0, 0, 0},
	{"commit -C dir", `git -C services/api commit -m "Fix the retry loop"`, outCommit, 0, 1, 0, 0, 0},
	{"commit with a heredoc message", "git commit -m \"$(cat <<'EOF'\nAdd the regression test\n\nAmp-Thread-ID: T-0199aa00-1111-7222-8333-444455556666\nCo-authored-by: Amp <amp@ampcode.com>\nEOF\n)\"", outCommitFix, 0, 1, 0, 0, 0},
	{"failed commit", `git commit -m "Fix the retry loop"`, outNothing, 1, 0, 0, 0, 0},
	{"failed hook", `git commit -m "Fix the retry loop"`, outHookFailed, 1, 0, 0, 0, 0},
	{"dry run", `git commit --dry-run -m "Fix the retry loop"`, outDryRun, 0, 0, 0, 0, 0},
	{"in a string", `echo "git commit -m 'Fix the retry loop'"`, "git commit -m 'Fix the retry loop'\n", 0, 0, 0, 0, 0},
	{"amend", `git commit --amend --no-edit`, outAmend, 0, 0, 0, 0, 0},
	{"commit then failing tests", `git commit -m "Fix the retry loop" && go test ./internal/retry/`, outCommit + outTestsFailed, 1, 0, 0, 0, 0},
	{"gh pr create", `gh pr create --fill`, outGhPR, 0, 0, 1, 0, 0},
	{"gh pr create, exists", `gh pr create --title "Fix the retry loop" --body "Fixes #12"`, outGhExists, 1, 0, 0, 0, 0},
	{"glab mr create", `glab mr create --fill --yes`, outGlabMR, 0, 0, 1, 0, 0},
	{"hub pull-request", `hub pull-request -m "Fix the retry loop"`, outHubPR, 0, 0, 1, 0, 0},
	{"push", `git push origin main`, outPush, 0, 0, 0, 1, 0},
	{"push up to date", `git push`, outUpToDate, 0, 0, 0, 1, 0},
	{"push rejected", `git push origin main`, outRejected, 1, 0, 0, 0, 1},
	{"ship it", "git checkout -b fix/retry && git add -A && git commit -m \"Add the regression test\" && git push -u origin fix/retry && gh pr create --fill", "Switched to a new branch 'fix/retry'\n" + outCommitFix + outPushNew + outGhPR, 0, 1, 1, 1, 0},
}

// VCS is what the shell calls of a corpus committed, pushed and opened.
type VCS struct {
	Commits, PullRequests int64
	// Pushes by outcome (PushSuccess, PushFailure).
	Pushes map[string]int64
	// CommitsByModel and PullRequestsByModel are the same commits and
	// pull requests by the model of the message that made the call.
	CommitsByModel, PullRequestsByModel map[string]int64
}

// add adds what o did to v.
func (v *VCS) add(o VCS) {
	v.Commits += o.Commits
	v.PullRequests += o.PullRequests
	for _, m := range []struct {
		to   *map[string]int64
		from map[string]int64
	}{
		{&v.Pushes, o.Pushes}, {&v.CommitsByModel, o.CommitsByModel}, {&v.PullRequestsByModel, o.PullRequestsByModel},
	} {
		for k, n := range m.from {
			if *m.to == nil {
				*m.to = map[string]int64{}
			}
			(*m.to)[k] += n
		}
	}
}

// vcsCaseFor picks the case a shell call runs (1 + its index), or 0 for
// an everyday command: about one shell call in two with
// Options.Commits, none without (and nothing drawn).
func (t *threadBuilder) vcsCaseFor(c *call) int {
	if !t.commits || t.nested || (c.kind != tBash && c.kind != tShell) || t.r.IntN(2) != 0 {
		return 0
	}
	return 1 + t.r.IntN(len(vcsCases))
}

// tallyVCS records what a case whose run is done did.
func (t *threadBuilder) tallyVCS(c *call) {
	if c.vcs == 0 || c.status != "done" || t.nested {
		return
	}
	vc := &vcsCases[c.vcs-1]
	t.vcs.Commits += vc.commits
	t.vcs.PullRequests += vc.prs
	if t.vcs.Pushes == nil {
		t.vcs.Pushes = map[string]int64{}
	}
	t.vcs.Pushes[PushSuccess] += vc.pushes
	t.vcs.Pushes[PushFailure] += vc.failedPushes
	if vc.commits > 0 {
		if t.vcs.CommitsByModel == nil {
			t.vcs.CommitsByModel = map[string]int64{}
		}
		t.vcs.CommitsByModel[c.model] += vc.commits
	}
	if vc.prs > 0 {
		if t.vcs.PullRequestsByModel == nil {
			t.vcs.PullRequestsByModel = map[string]int64{}
		}
		t.vcs.PullRequestsByModel[c.model] += vc.prs
	}
}

// shellCommand is the command a shell call runs: its case's, or an
// everyday one of its project's language.
func (t *threadBuilder) shellCommand(c *call) string {
	if c.vcs > 0 {
		return vcsCases[c.vcs-1].command
	}
	return pick(t.r, commands[t.proj.lang])
}

// VCSTexts are the texts of the cases' commands and outputs that must
// never reach a label or a log: every command, and every output line of
// more than 12 bytes (a commit's subject, a request's URL, a remote).
func VCSTexts() []string {
	seen := map[string]bool{}
	var out []string
	add := func(s string) {
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	for _, vc := range vcsCases {
		add(vc.command)
		for _, line := range strings.Split(vc.output, "\n") {
			if line = strings.TrimSpace(line); len(line) > 12 {
				add(line)
			}
		}
	}
	return out
}
