package linecount

import (
	"strings"
	"testing"
)

// The CLI's own line counts (its bundle, 0.0.1790142911), transliterated
// for the comparison in docs/counting.md: a diff of the texts split on
// "\n" as JavaScript splits them (a last "\n" leaves an empty last line,
// an empty text is one empty line), and a created file's lines as
// content.split("\n").length after dropping one last "\n".

// ampDiff is the CLI's bX: added and deleted lines of the shortest diff of
// old.split("\n") and new.split("\n") (0 when the texts are equal).
func ampDiff(old, new string) (added, deleted int64) {
	if old == new {
		return 0, 0
	}
	a, b := strings.Split(old, "\n"), strings.Split(new, "\n")
	t := make([][]int, len(a)+1)
	for i := range t {
		t[i] = make([]int, len(b)+1)
	}
	for i := len(a) - 1; i >= 0; i-- {
		for j := len(b) - 1; j >= 0; j-- {
			if a[i] == b[j] {
				t[i][j] = t[i+1][j+1] + 1
			} else {
				t[i][j] = max(t[i+1][j], t[i][j+1])
			}
		}
	}
	return int64(len(b) - t[0][0]), int64(len(a) - t[0][0])
}

// ampLines is the CLI's MS.
func ampLines(content string) int64 {
	content = strings.TrimSuffix(content, "\n")
	return int64(len(strings.Split(content, "\n")))
}

// TestAgreesWithAmp: ampDiff and ampLines are the oracle. The fixtures
// are the ordinary edits and the cases where a simpler rule (a line ends
// at "\n", an empty text has none) would differ from Amp's: a last line
// break on one side only, an empty old_str, a file created empty.
func TestAgreesWithAmp(t *testing.T) {
	for _, c := range []struct{ old, new string }{
		{"a\nb\nc", "a\nB\nc"},
		{"a\nb\nc\n", "a\nc\n"},
		{"if x {\n\treturn\n}", "if x {\n    return\n}"},
		{"a\r\nb\r\n", "a\r\nB\r\n"},
		{"a\nb\nc", "b\nc\na"},
		{"x", "x\ny\nz"},
		{"a\nb", "a\nb\n"},       // a last line break added: +1
		{"a\nb\n", "a\nb"},       // and removed: −1
		{"a\r\nb", "a\r\nb\r\n"}, // CRLF: the same
		{"", "x"},                // an empty line replaced: +1 −1
		{"", "x\n"},              // x and an empty last line for the empty line: +1
		{"x", ""},
		{"", "\n"},
		{"\n", "\n\n"},
	} {
		add, rem, exact := Diff(c.old, c.new)
		if aa, ad := ampDiff(c.old, c.new); add != aa || rem != ad || !exact {
			t.Errorf("Diff(%q, %q) = +%d -%d (exact %v), Amp +%d -%d", c.old, c.new, add, rem, exact, aa, ad)
		}
	}
	for _, content := range []string{"", "\n", "a", "a\n", "a\nb", "a\r\nb\r\n", "\n\n", "x\n\ny", "a\n\n"} {
		if Lines(content) != ampLines(content) {
			t.Errorf("Lines(%q) = %d, Amp %d", content, Lines(content), ampLines(content))
		}
	}
}

// TestPatchCountsAsTheRowNotAsDiffStats: Amp's thread row for an
// apply_patch counts the hunk's + and - lines (what the patch writes), as
// Patch does; only the thread list's diffStats diffs each hunk's old
// lines (context and -) against its new ones (context and +), where the
// shortest script can be shorter. A hunk that removes a line and adds it
// back after another shows the two apart.
func TestPatchCountsAsTheRowNotAsDiffStats(t *testing.T) {
	patch := "*** Begin Patch\n*** Update File: f\n@@\n keep\n-a\n+b\n+a\n*** End Patch"
	add, rem := Patch(patch)
	aa, ar := ampDiff("keep\na", "keep\nb\na")
	if add != 2 || rem != 1 || aa != 1 || ar != 0 {
		t.Errorf("patch hunk: row (Patch) +%d -%d, diffStats +%d -%d; want +2 -1 and +1 -0", add, rem, aa, ar)
	}
}
