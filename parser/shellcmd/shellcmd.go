// Package shellcmd recognises, in one shell tool call, the commits it made,
// the pull requests it opened and the pushes it ran: from the command's
// text, what the call printed and its exit code. The command is read as a
// shell reads it (quotes, escapes, operators, substitutions, heredocs,
// comments), so `echo "git commit"` is no commit; the output is the proof
// that a command did what it says (git's new-commit header, the pull
// request's URL), so a failed or empty commit is no commit.
//
// It is pure and bounded: no I/O, no clock, no allocation, time linear in
// the bytes read, and nothing of the command, its output or the URLs it
// printed is kept. docs/counting.md describes the rules.
package shellcmd

import "strings"

// MaxCommandBytes bounds what is read of a command: a longer command is
// read up to this many bytes (the thread parser holds no longer string).
const MaxCommandBytes = 1 << 20

// MaxOutputBytes bounds what is read of an output: its last this many
// bytes, where git and the forges' CLIs print what proves a command did
// its work (the Amp CLI keeps the last 50,000 characters of a shell
// output anyway).
const MaxOutputBytes = 1 << 20

// Result is what one shell call did. Every count is at most the number of
// such commands in the call and at most what its output proves.
type Result struct {
	// Commits is the new commits the call made: `git commit` commands
	// (not --amend, not --dry-run) of a call that exited 0, proved by the
	// header git prints for a new commit (`[main abc1234] message`).
	Commits int
	// PullRequests is the pull or merge requests the call opened
	// (`gh pr create`, `glab mr create`, `hub pull-request`) in a call that
	// exited 0, proved by the request's URL alone on a line of the output.
	PullRequests int
	// Pushes is the `git push` commands (not --dry-run) whose output shows
	// they reached the remote: a `To <remote>` line that no "failed to
	// push" error follows, or "Everything up-to-date".
	Pushes int
	// FailedPushes is the other `git push` commands of the call.
	FailedPushes int
}

// Recognize says what one shell call did: command is the command's text
// (the Bash tool's `cmd`, shell_command's `command`), output what it
// printed as the tool result carries it, exitCode its exit code (the
// caller passes a nonzero code when the result has none).
func Recognize(command, output string, exitCode int64) Result {
	if len(command) > MaxCommandBytes {
		command = command[:MaxCommandBytes]
	}
	if !mayMatter(command) {
		return Result{}
	}
	var c counter
	lex(command, &c)
	var r Result
	if c.commits == 0 && c.prs == 0 && c.pushes == 0 {
		return r
	}
	want := c
	if exitCode != 0 {
		// A commit or pull request counts only when the whole call
		// succeeded; a push's outcome is in its own output.
		want.commits, want.prs = 0, 0
	}
	p := scanOutput(output, want.commits > 0, want.prs > 0, want.pushes > 0)
	r.Commits = min(want.commits, p.headers)
	r.PullRequests = min(want.prs, p.urls)
	r.Pushes = min(c.pushes, max(0, p.pushed-p.pushFailed))
	r.FailedPushes = c.pushes - r.Pushes
	return r
}

// mayMatter is the pre-check that keeps the cost of every other command
// to a few byte searches: a command that can commit, push or open a pull
// request holds one of these words.
func mayMatter(command string) bool {
	if (strings.Contains(command, "git") || strings.Contains(command, "hub")) &&
		(strings.Contains(command, "commit") || strings.Contains(command, "push") || strings.Contains(command, "pull-request")) {
		return true
	}
	// gh pr create / new, glab mr create / new, hub pull-request.
	return (strings.Contains(command, "create") || strings.Contains(command, "new")) &&
		(strings.Contains(command, "pr") || strings.Contains(command, "mr")) ||
		strings.Contains(command, "pull-request")
}
