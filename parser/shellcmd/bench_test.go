package shellcmd

import "testing"

// BenchmarkRecognize measures a call's cost: the typical shell call, which
// the pre-check turns away, against the calls that are read whole.
func BenchmarkRecognize(b *testing.B) {
	cases := []struct {
		name, command, output string
	}{
		{"not-git", `cd /src/web && go test ./parser/... 2>&1 | tail -40`, "ok  \tgithub.com/acme/web/parser\t0.412s\n"},
		{"not-git-long", "cat > main.go <<'EOF'\n" + string(make([]byte, 4096)) + "\nEOF\ngo build ./...", ""},
		{"git-status", `git status --short && git diff --stat`, " M parser/x.go\n 1 file changed, 2 insertions(+)\n"},
		{"git-commit", `git add -A && git commit -m "$(cat <<'EOF'` + "\nAdd the parser\n\nAmp-Thread-ID: T-1\nEOF\n)\"", commitOut},
		{"commit-push-pr", "git add -A && git commit -m \"Fix it\" && git push -u origin fix && gh pr create --fill", commitOut + pushNewOut + ghOut},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(c.command) + len(c.output)))
			for b.Loop() {
				Recognize(c.command, c.output, 0)
			}
		})
	}
}
