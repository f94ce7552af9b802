package shellcmd

import (
	"strings"
	"testing"
)

// Outputs as git and the forges' CLIs print them.
const (
	commitOut     = "[main 1a2b3c4] Add the parser\n 2 files changed, 40 insertions(+), 3 deletions(-)\n create mode 100644 parser/x.go\n"
	rootCommitOut = "[main (root-commit) 9f8e7d6] Initial commit\n 1 file changed, 1 insertion(+)\n"
	detachedOut   = "[detached HEAD 0123abc] Try it\n 1 file changed, 1 deletion(-)\n"
	pushOut       = "To github.com:acme/web.git\n   1a2b3c4..5d6e7f8  main -> main\n"
	pushNewOut    = "remote: \nremote: Create a pull request for 'fix' on GitHub by visiting:\nremote:      https://github.com/acme/web/pull/new/fix\nremote: \nTo github.com:acme/web.git\n * [new branch]      fix -> fix\nbranch 'fix' set up to track 'origin/fix'.\n"
	pushRejected  = "To github.com:acme/web.git\n ! [rejected]        main -> main (fetch first)\nerror: failed to push some refs to 'github.com:acme/web.git'\nhint: Updates were rejected because the remote contains work that you do not\n"
	upToDate      = "Everything up-to-date\n"
	nothingOut    = "On branch main\nnothing to commit, working tree clean\n"
	ghOut         = "\nCreating pull request for fix into main in acme/web\n\nhttps://github.com/acme/web/pull/123\n"
	ghExists      = "a pull request for branch \"fix\" into branch \"main\" already exists:\nhttps://github.com/acme/web/pull/123\n"
	glabOut       = "\nCreating merge request for fix into main in acme/platform/web\n\n!42 Fix the parser (fix)\n https://gitlab.com/acme/platform/web/-/merge_requests/42\n\n"
	hubOut        = "https://github.example.com/acme/web/pull/7\n"
)

func TestRecognize(t *testing.T) {
	tests := []struct {
		name    string
		command string
		output  string
		exit    int64
		want    Result
	}{
		// Commits.
		{"commit", `git commit -m "Add the parser"`, commitOut, 0, Result{Commits: 1}},
		{"root commit", `git commit -m init`, rootCommitOut, 0, Result{Commits: 1}},
		{"detached HEAD", `git commit -m try`, detachedOut, 0, Result{Commits: 1}},
		{"chained", `git add -A && git commit -m "x" && git push`, commitOut + pushOut, 0, Result{Commits: 1, Pushes: 1}},
		{"semicolons", `git add -A; git commit -m x; git status`, commitOut + "On branch main\n", 0, Result{Commits: 1}},
		{"newlines", "git add -A\ngit commit -m x\n", commitOut, 0, Result{Commits: 1}},
		{"-a", `git commit -a -m "x"`, commitOut, 0, Result{Commits: 1}},
		{"-am", `git commit -am "x"`, commitOut, 0, Result{Commits: 1}},
		{"-C dir", `git -C /src/web commit -m x`, commitOut, 0, Result{Commits: 1}},
		{"-c config", `git -c user.name=x -c user.email=x@y commit -m x`, commitOut, 0, Result{Commits: 1}},
		{"--no-pager and --git-dir", `git --no-pager --git-dir .git --work-tree=. commit -m x`, commitOut, 0, Result{Commits: 1}},
		{"path to git", `/usr/bin/git commit -m x`, commitOut, 0, Result{Commits: 1}},
		{"quoted name", `"git" 'commit' -m x`, commitOut, 0, Result{Commits: 1}},
		{"assignment before", `GIT_AUTHOR_NAME=bot GIT_COMMITTER_DATE="$(date)" git commit -m x`, commitOut, 0, Result{Commits: 1}},
		{"env prefix", `env -i GIT_AUTHOR_NAME=bot git commit -m x`, commitOut, 0, Result{Commits: 1}},
		{"timeout prefix", `timeout 60 git commit -m x`, commitOut, 0, Result{Commits: 1}},
		{"timeout with a signal", `timeout -s KILL 60 git commit -m x`, commitOut, 0, Result{Commits: 1}},
		{"env -u", `env -u GIT_DIR git commit -m x`, commitOut, 0, Result{Commits: 1}},
		{"time -p", `time -p git commit -m x`, commitOut, 0, Result{Commits: 1}},
		{"subshell", `(cd web && git commit -m x)`, commitOut, 0, Result{Commits: 1}},
		{"group", `{ git add .; git commit -m x; }`, commitOut, 0, Result{Commits: 1}},
		{"if", `if git commit -m x; then echo ok; fi`, commitOut + "ok\n", 0, Result{Commits: 1}},
		{"pipe", `git commit -m x | tail -5`, commitOut, 0, Result{Commits: 1}},
		{"redirect", `git commit -m x 2>&1 >/tmp/log`, commitOut, 0, Result{Commits: 1}},
		{"message from heredoc", "git commit -F - <<'EOF'\nAdd the parser\n\ngit commit in a message\nEOF\n", commitOut, 0, Result{Commits: 1}},
		{"message from substitution", `git commit -m "$(cat <<'EOF'` + "\nAdd the parser\n\nAmp-Thread-ID: T-1\nEOF\n)\"", commitOut, 0, Result{Commits: 1}},
		{"line continuation", "git add . && \\\n  git commit \\\n  -m x", commitOut, 0, Result{Commits: 1}},
		{"inside a substitution", `echo "made $(git commit -q -m x && git rev-parse HEAD)"`, "[main 1a2b3c4] x\nmade 1a2b3c4d\n", 0, Result{Commits: 1}},
		{"inside backquotes", "echo `git commit -m x`", "[main 1a2b3c4] x\n", 0, Result{Commits: 1}},
		{"two commits", `git add a && git commit -m a && git add b && git commit -m b`, commitOut + "[main 5d6e7f8] b\n 1 file changed\n", 0, Result{Commits: 2}},
		{"two commands, one header", `git commit -m a; git commit -m b`, commitOut + nothingOut, 0, Result{Commits: 1}},
		{"one command, two headers", `git cherry-pick abc && git commit -m b`, commitOut + commitOut, 0, Result{Commits: 1}},
		{"long hook output before the header", `git commit -m x`, strings.Repeat("lint ok\n", 10000) + commitOut, 0, Result{Commits: 1}},
		{"sha256 id", `git commit -m x`, "[main 1a2b3c4d5e6f7a8b9c0d1e2f3a4b5c6d7e8f9a0b1c2d3e4f5a6b7c8d9e0f1a2b] x\n", 0, Result{Commits: 1}},
		{"--fixup makes a new commit", `git commit --fixup abc1234`, commitOut, 0, Result{Commits: 1}},
		{"message exactly --amend", `git commit -m --amend`, commitOut, 0, Result{Commits: 1}},
		{"-S then --amend", `git commit -S --amend --no-edit`, commitOut, 0, Result{}},
		{"hub as git", `hub commit -m x`, commitOut, 0, Result{Commits: 1}},
		{"heredoc opened on the commit's line", "cat <<EOF > notes.md && git add notes.md && git commit -m notes\ngit commit -m y\nEOF\n", commitOut, 0, Result{Commits: 1}},
		{"pre-commit hooks' lines", `git commit -m x`, "[INFO] Initializing environment for https://github.com/psf/black.\n[WARNING] Unstaged files detected.\nblack....................Passed\n" + commitOut, 0, Result{Commits: 1}},
		{"a loop: one command, counted once", `for f in a b; do git add $f && git commit -m $f; done`, commitOut + commitOut, 0, Result{Commits: 1}},
		{"closing parenthesis in a message", `git commit -m "fix (a) and b)" && git push`, commitOut + pushOut, 0, Result{Commits: 1, Pushes: 1}},
		{"quotes joined", `git commit -m 'it'"'"'s done'`, commitOut, 0, Result{Commits: 1}},
		{"test before", `[[ -n "$(git status --porcelain)" ]] && git commit -am wip`, commitOut, 0, Result{Commits: 1}},

		// Not new commits.
		{"failed", `git commit -m x`, nothingOut, 1, Result{}},
		{"nothing to commit, exit 0", `git commit -m x || true`, nothingOut, 0, Result{}},
		{"header but nonzero exit", `git commit -m x && make test`, commitOut + "FAIL\n", 2, Result{}},
		{"dry run", `git commit --dry-run -m x`, commitOut, 0, Result{}},
		{"dry run last", `git -C web commit -m x --dry-run`, commitOut, 0, Result{}},
		{"quiet prints no header", `git commit -q -m x`, "", 0, Result{}},
		{"sudo is not read", `sudo -u bot git commit -m x`, commitOut, 0, Result{}},
		{"sh -c is not read", `sh -c 'git commit -m x'`, commitOut, 0, Result{}},
		{"amend", `git commit --amend --no-edit`, commitOut, 0, Result{}},
		{"amend with message", `git commit --amend -m "better"`, commitOut, 0, Result{}},
		{"echo", `echo "git commit"`, commitOut, 0, Result{}},
		{"echo unquoted", `echo git commit -m x`, commitOut, 0, Result{}},
		{"single quotes", `printf '%s\n' 'git commit -m x'`, commitOut, 0, Result{}},
		{"ANSI-C quotes", `echo $'git commit\n'`, commitOut, 0, Result{}},
		{"escaped quote in string", `echo "say \"git commit\" now"`, commitOut, 0, Result{}},
		{"heredoc body", "cat > notes.md <<EOF\ngit commit -m x\nEOF\n", commitOut, 0, Result{}},
		{"heredoc body, tabs", "cat <<-END >x\n\tgit commit -m x\n\tEND\necho done", commitOut, 0, Result{}},
		{"comment", "# git commit -m x\nls", commitOut, 0, Result{}},
		{"comment after a command", "ls # then git commit", commitOut, 0, Result{}},
		{"grep for it", `grep -rn "git commit" docs/ | head`, "docs/a.md:[main 1a2b3c4] x\n", 0, Result{}},
		{"git log", `git log -1 --format='%H git commit'`, commitOut, 0, Result{}},
		{"commit-tree", `git commit-tree HEAD^{tree} -m x`, commitOut, 0, Result{}},
		{"git word in an argument", `ls git commit`, commitOut, 0, Result{}},
		{"a header the command did not print", `git status`, commitOut, 0, Result{}},
		{"header inside a line", `git commit -m x`, "log: [main 1a2b3c4] x\n", 0, Result{}},
		{"header without an id", `git commit -m x`, "[main] x\n[main xyz1234] y\n", 0, Result{}},
		{"variable as the command", `$GIT commit -m x`, commitOut, 0, Result{}},
		{"unknown exit", `git commit -m x`, commitOut, -1, Result{}},

		// Pull requests.
		{"gh pr create", `gh pr create --title "Fix" --body "Fixes it"`, ghOut, 0, Result{PullRequests: 1}},
		{"gh pr new", `gh pr new -t x -b y`, ghOut, 0, Result{PullRequests: 1}},
		{"gh after a push", `git push -u origin fix && gh pr create --fill`, pushNewOut + ghOut, 0, Result{PullRequests: 1, Pushes: 1}},
		{"gh body from heredoc", "gh pr create --title x --body-file - <<'EOF'\nhttps://github.com/acme/web/pull/1\nEOF", ghOut, 0, Result{PullRequests: 1}},
		{"gh already exists", `gh pr create --fill`, ghExists, 1, Result{}},
		{"gh already exists, exit 0", `gh pr create --fill || true`, ghExists, 0, Result{}},
		{"gh dry run", `gh pr create --dry-run --fill`, ghOut, 0, Result{}},
		{"gh failed", `gh pr create --fill`, "pull request create failed: GraphQL: No commits between main and fix\n", 1, Result{}},
		{"gh --web prints no URL", `gh pr create --web`, "Opening github.com/acme/web/compare/main...fix in your browser.\n", 0, Result{}},
		{"gh pr view", `gh pr view 123`, ghOut, 0, Result{}},
		{"gh pr list", `gh pr list`, "https://github.com/acme/web/pull/123\n", 0, Result{}},
		{"echo gh pr create", `echo "gh pr create"`, ghOut, 0, Result{}},
		{"the push's compare link", `git push -u origin fix`, pushNewOut, 0, Result{Pushes: 1}},
		{"glab mr create", `glab mr create --fill --yes`, glabOut, 0, Result{PullRequests: 1}},
		{"glab mr create failed", `glab mr create --fill --yes`, "Failed to create merge request. Created one already: https://gitlab.com/acme/web/-/merge_requests/42\n", 1, Result{}},
		{"hub pull-request", `hub pull-request -m "Fix"`, hubOut, 0, Result{PullRequests: 1}},
		{"git aliased to hub", `git pull-request -m "Fix"`, hubOut, 0, Result{PullRequests: 1}},
		{"URL in a sentence", `gh pr create --fill`, "see https://github.com/acme/web/pull/123 for it\n", 0, Result{}},
		{"issue URL", `gh pr create --fill`, "https://github.com/acme/web/issues/123\n", 0, Result{}},
		{"two PRs", `gh pr create -R acme/web --fill; gh pr create -R acme/api --fill`, ghOut + "https://github.com/acme/api/pull/9\n", 0, Result{PullRequests: 2}},

		// Pushes.
		{"push", `git push`, pushOut, 0, Result{Pushes: 1}},
		{"push up to date", `git push origin main`, upToDate, 0, Result{Pushes: 1}},
		{"push rejected", `git push origin main`, pushRejected, 1, Result{FailedPushes: 1}},
		{"push rejected, exit 0", `git push origin main; echo done`, pushRejected + "done\n", 0, Result{FailedPushes: 1}},
		{"push fatal", `git push`, "fatal: could not read Username for 'https://github.com': terminal prompts disabled\n", 128, Result{FailedPushes: 1}},
		{"push dry run", `git push --dry-run`, pushOut, 0, Result{}},
		{"push -n", `git push -nu origin fix`, pushOut, 0, Result{}},
		{"push -o value", `git push -o ci.skip origin main`, pushOut, 0, Result{Pushes: 1}},
		{"two pushes, one rejected", `git push origin main; git push other main`, pushOut + pushRejected, 1, Result{Pushes: 1, FailedPushes: 1}},

		// Everything at once.
		{"ship it", "set -e\ngit checkout -b fix\ngit add -A\ngit commit -m \"$(cat <<'EOF'\nFix it\n\nAmp-Thread-ID: T-1\nEOF\n)\"\ngit push -u origin fix\ngh pr create --fill\n",
			"Switched to a new branch 'fix'\n[fix 1a2b3c4] Fix it\n 1 file changed, 2 insertions(+)\n" + pushNewOut + ghOut, 0, Result{Commits: 1, PullRequests: 1, Pushes: 1}},
		{"not git at all", `go test ./...`, "ok\n", 0, Result{}},
		{"empty", ``, ``, 0, Result{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Recognize(tt.command, tt.output, tt.exit); got != tt.want {
				t.Errorf("Recognize(%q, …, %d) = %+v, want %+v", tt.command, tt.exit, got, tt.want)
			}
		})
	}
}

// TestBounds: a command is read up to MaxCommandBytes, an output in its last
// MaxOutputBytes.
func TestBounds(t *testing.T) {
	pad := strings.Repeat("x", MaxOutputBytes)
	tests := []struct {
		name    string
		command string
		output  string
		want    Result
	}{
		{"header in the last MiB", `git commit -m x`, pad + "\n" + commitOut, Result{Commits: 1}},
		{"header before the last MiB", `git commit -m x`, commitOut + pad, Result{}},
		{"header on the cut line", `git commit -m x`, "[main 1a2b3c4]" + pad, Result{}},
		{"commit in the first MiB", "git commit -m x\n: " + strings.Repeat("y", MaxCommandBytes), commitOut, Result{Commits: 1}},
		{"commit past the first MiB", ": " + strings.Repeat("y", MaxCommandBytes) + "\ngit commit -m x", commitOut, Result{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Recognize(tt.command, tt.output, 0); got != tt.want {
				t.Errorf("Recognize = %+v, want %+v", got, tt.want)
			}
		})
	}
}

// TestReadInParts: a call read in two parts, the command first and the
// output later, read for every proof when the command was not known yet,
// says what Recognize says of it whole.
func TestReadInParts(t *testing.T) {
	outputs := []string{"", commitOut, commitOut + commitOut + pushOut + ghOut, rootCommitOut + glabOut + upToDate, pushRejected + hubOut + detachedOut, ghExists, nothingOut}
	commands := append([]string{
		`git commit -m x && git push && gh pr create --fill`,
		`git commit -m a; git commit -m b; git push; git push other`,
		`glab mr create; hub pull-request`,
		`echo "git commit"`,
	}, lexCases...)
	for _, cmd := range commands {
		for _, out := range outputs {
			for _, exit := range []int64{0, 1, -1} {
				want := Recognize(cmd, out, exit)
				in := ReadCommand(cmd)
				if got := in.Result(ReadOutput(out, in), exit); got != want {
					t.Errorf("%q exit %d: read for its intent %+v, Recognize %+v", cmd, exit, got, want)
				}
				if got := in.Result(ReadOutput(out, AnyIntent), exit); got != want {
					t.Errorf("%q exit %d: read for any intent %+v, Recognize %+v", cmd, exit, got, want)
				}
			}
		}
	}
	if n := len(commands); n < 20 {
		t.Fatalf("only %d commands", n)
	}
}
