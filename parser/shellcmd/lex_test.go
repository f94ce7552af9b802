package shellcmd

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite testdata/lex.golden")

// lexCases are commands whose reading testdata/lex.golden records.
var lexCases = []string{
	`git add -A && git commit -m "x" && git push`,
	"a; b\nc || d | e & f",
	`echo "git commit" 'it''s' "a\"b" a\ b`,
	`echo $'a\'b' $"c d"`,
	`x=1 y="$(date)" git -C "$HOME/src" commit`,
	`echo "a $(git commit -m "in $(pwd)") b" after`,
	"echo `git commit -m x` after",
	`diff <(git show HEAD:a) >(wc -l) 2>&1 >out`,
	"cat <<EOF >f\ngit commit\nEOF\nls",
	"cat <<-'E' <<X\n\tgit a\n\tE\ngit b\nX\ngit c",
	"git commit -F- <<< 'msg'",
	"# comment git commit\nls # more\ngit status#not",
	"git add . \\\n  && git com\\\nmit",
	"(cd a && (git commit)); { ls; }",
	"echo $((1 + (2 * 3))) done",
	"case $x in a) git commit ;; esac",
	"echo ${A:-\"x y\"} ${B}",
	"f() { git commit; }",
	"echo 'unterminated",
	`echo "unterminated $(git commit`,
	"echo " + strings.Repeat("x", maxWord+1),
	"git commit -m \"a\r\nb\"\r\ngit push\r\n",
}

func TestLexGolden(t *testing.T) {
	var b strings.Builder
	for _, c := range lexCases {
		var tr trace
		lex(c, &counter{trace: &tr})
		fmt.Fprintf(&b, "%q\n%s", c, tr.b.String())
	}
	path := filepath.Join("testdata", "lex.golden")
	if *update {
		if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("reading the golden file (go test -update writes it): %v", err)
	}
	if got := b.String(); got != string(want) {
		t.Errorf("the lexer's reading differs from %s (go test -update rewrites it):\n%s", path, got)
	}
}
