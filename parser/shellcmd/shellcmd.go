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
// caller passes a nonzero code when the result has none). It is
// ReadCommand, ReadOutput and Intent.Result in one.
func Recognize(command, output string, exitCode int64) Result {
	in := ReadCommand(command)
	if !in.Any() {
		return Result{}
	}
	return in.Result(ReadOutput(output, in.wanted(exitCode)), exitCode)
}

// Intent is what a command can do: how many of its simple commands commit,
// open a pull request or push. A thread's tool call is read in two parts,
// its command when the tool_use is read and its output when the result is,
// so the reading of the command is kept in between (a few bytes, nothing
// of the text).
type Intent struct {
	Commits      int32 `json:"c,omitempty"`
	PullRequests int32 `json:"p,omitempty"`
	Pushes       int32 `json:"u,omitempty"`
}

// Any reports whether the command can do anything counted: its output is
// worth reading.
func (in Intent) Any() bool { return in != Intent{} }

// AnyIntent is what an output is read for when the command is not known
// yet (a result read before its tool_use): every proof.
var AnyIntent = Intent{Commits: 1, PullRequests: 1, Pushes: 1}

// ReadCommand reads a command's text (its first MaxCommandBytes).
func ReadCommand(command string) Intent {
	if len(command) > MaxCommandBytes {
		command = command[:MaxCommandBytes]
	}
	if !mayMatter(command) {
		return Intent{}
	}
	var c counter
	lex(command, &c)
	return Intent{Commits: clamp32(c.commits), PullRequests: clamp32(c.prs), Pushes: clamp32(c.pushes)}
}

func clamp32(n int) int32 { return int32(min(n, 1<<31-1)) }

// wanted is what of in an output can prove for a call that exited with
// exitCode: a commit or pull request counts only when the whole call
// succeeded; a push's outcome is in its own output.
func (in Intent) wanted(exitCode int64) Intent {
	if exitCode != 0 {
		in.Commits, in.PullRequests = 0, 0
	}
	return in
}

// Proof is what an output shows was done: the lines that prove a commit,
// a pull request, a push or a failed one. It holds counts only.
type Proof struct {
	Headers    int32 `json:"h,omitempty"`
	URLs       int32 `json:"r,omitempty"`
	Pushed     int32 `json:"u,omitempty"`
	PushFailed int32 `json:"f,omitempty"`
}

// ReadOutput reads, in the last MaxOutputBytes of output, the lines that
// can prove what in says the command can do (AnyIntent: all of them).
func ReadOutput(output string, in Intent) Proof {
	p := scanOutput(output, in.Commits > 0, in.PullRequests > 0, in.Pushes > 0)
	return Proof{Headers: clamp32(p.headers), URLs: clamp32(p.urls), Pushed: clamp32(p.pushed), PushFailed: clamp32(p.pushFailed)}
}

// Result is what a call whose command reads as in did, given the proof its
// output holds (read for in, or for more) and its exit code. Every count
// is at most the commands that can make it and at most what p proves.
func (in Intent) Result(p Proof, exitCode int64) Result {
	want := in.wanted(exitCode)
	var r Result
	r.Commits = int(min(want.Commits, p.Headers))
	r.PullRequests = int(min(want.PullRequests, p.URLs))
	r.Pushes = int(min(in.Pushes, max(0, p.Pushed-p.PushFailed)))
	r.FailedPushes = int(in.Pushes) - r.Pushes
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
