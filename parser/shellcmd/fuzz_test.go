package shellcmd

import (
	"strings"
	"testing"
)

// checkResult checks what holds for any call: counts are never negative,
// never more than the commands that could have made them, and a call that
// failed made no commit and opened no pull request.
func checkResult(t *testing.T, command, output string, exit int64) Result {
	t.Helper()
	r := Recognize(command, output, exit)
	if r.Commits < 0 || r.PullRequests < 0 || r.Pushes < 0 || r.FailedPushes < 0 {
		t.Fatalf("Recognize(%q, %q, %d) = %+v: a negative count", command, output, exit, r)
	}
	if n := strings.Count(command, "commit"); r.Commits > n {
		t.Fatalf("Recognize(%q, %q, %d) = %+v: more commits than %d commit words", command, output, exit, r, n)
	}
	if n := strings.Count(output, "["); r.Commits > n {
		t.Fatalf("Recognize(%q, %q, %d) = %+v: more commits than %d headers could be", command, output, exit, r, n)
	}
	if n := strings.Count(command, "create") + strings.Count(command, "new") + strings.Count(command, "pull-request"); r.PullRequests > n {
		t.Fatalf("Recognize(%q, %q, %d) = %+v: more pull requests than %d create words", command, output, exit, r, n)
	}
	if n := strings.Count(output, "http"); r.PullRequests > n {
		t.Fatalf("Recognize(%q, %q, %d) = %+v: more pull requests than %d URLs could be", command, output, exit, r, n)
	}
	if n := strings.Count(command, "push"); r.Pushes+r.FailedPushes > n {
		t.Fatalf("Recognize(%q, %q, %d) = %+v: more pushes than %d push words", command, output, exit, r, n)
	}
	if exit != 0 && (r.Commits != 0 || r.PullRequests != 0) {
		t.Fatalf("Recognize(%q, %q, %d) = %+v: a failed call counted", command, output, exit, r)
	}
	// Read in two parts, the output read for every proof (a result read
	// before its command), the call says the same.
	if in := ReadCommand(command); in.Result(ReadOutput(output, AnyIntent), exit) != r {
		t.Fatalf("Recognize(%q, %q, %d) = %+v, read in parts %+v", command, output, exit, r, in.Result(ReadOutput(output, AnyIntent), exit))
	}
	return r
}

func FuzzRecognize(f *testing.F) {
	outputs := []string{commitOut + pushOut + ghOut, rootCommitOut + glabOut + upToDate, pushRejected + hubOut + detachedOut}
	for i, c := range lexCases {
		f.Add(c, outputs[i%len(outputs)], int64(0))
	}
	f.Add("git commit -m x && git push && gh pr create --fill", commitOut+pushOut+ghOut, int64(0))
	f.Add("glab mr create; hub pull-request; git pull-request", glabOut+hubOut+hubOut, int64(0))
	f.Add("git commit --amend; git push -n", commitOut+pushOut, int64(1))
	f.Add(strings.Repeat("$(", 40)+"git commit"+strings.Repeat(")", 40), commitOut, int64(0))
	f.Add(strings.Repeat("cat <<A\n", 20)+"git commit", commitOut, int64(0))
	f.Fuzz(func(t *testing.T, command, output string, exit int64) {
		checkResult(t, command, output, exit)

		// Linear: every step of the lexer moves forward.
		if steps := lex(command, &counter{}); steps > len(command) {
			t.Fatalf("lex(%q) took %d steps for %d bytes", command, steps, len(command))
		}

		// A command that only appears inside a string, a heredoc or a
		// comment does nothing.
		quoted := "echo '" + strings.ReplaceAll(command, "'", "") + "'"
		doc := "cat <<'ZZ'\n" + strings.ReplaceAll(command, "ZZ", "") + "\nZZ\n"
		comment := "# " + strings.NewReplacer("\n", " ", "\r", " ").Replace(command)
		for _, c := range []string{quoted, doc, comment} {
			if r := checkResult(t, c, output, exit); r != (Result{}) {
				t.Fatalf("Recognize(%q, %q, %d) = %+v: a command inside a string counted", c, output, exit, r)
			}
		}
	})
}
