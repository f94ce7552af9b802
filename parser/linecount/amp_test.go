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

// TestAgreesWithAmpExceptWhereDocumented: on ordinary edits the exporter's
// counts are Amp's; the cases docs/counting.md lists differ by what it
// says.
func TestAgreesWithAmpExceptWhereDocumented(t *testing.T) {
	same := []struct{ old, new string }{
		{"a\nb\nc", "a\nB\nc"},
		{"a\nb\nc\n", "a\nc\n"},
		{"if x {\n\treturn\n}", "if x {\n    return\n}"},
		{"a\r\nb\r\n", "a\r\nB\r\n"},
		{"a\nb\nc", "b\nc\na"},
		{"x", "x\ny\nz"},
	}
	for _, c := range same {
		add, rem, _ := Diff(c.old, c.new)
		if aa, ad := ampDiff(c.old, c.new); add != aa || rem != ad {
			t.Errorf("Diff(%q, %q) = +%d -%d, Amp +%d -%d", c.old, c.new, add, rem, aa, ad)
		}
	}
	for _, content := range []string{"a", "a\n", "a\nb", "a\r\nb\r\n", "\n\n", "x\n\ny"} {
		if Lines(content) != ampLines(content) {
			t.Errorf("Lines(%q) = %d, Amp %d", content, Lines(content), ampLines(content))
		}
	}
	// The documented differences.
	for _, c := range []struct {
		name                 string
		old, new             string
		add, rem, aAdd, aRem int64
	}{
		{"a last line break on one side", "a\nb", "a\nb\n", 0, 0, 1, 0},
		{"empty old_str", "", "x", 1, 0, 1, 1},
	} {
		add, rem, _ := Diff(c.old, c.new)
		aa, ar := ampDiff(c.old, c.new)
		if add != c.add || rem != c.rem || aa != c.aAdd || ar != c.aRem {
			t.Errorf("%s: exporter +%d -%d, Amp +%d -%d; documented +%d -%d and +%d -%d", c.name, add, rem, aa, ar, c.add, c.rem, c.aAdd, c.aRem)
		}
	}
	if Lines("") != 0 || ampLines("") != 1 {
		t.Errorf("a file created empty: exporter %d, Amp %d; documented 0 and 1", Lines(""), ampLines(""))
	}
	// A patch hunk that removes a line and adds it back after another:
	// the exporter counts the + and - lines, Amp diffs the hunk's old
	// lines (context and -) against its new ones (context and +).
	patch := "*** Begin Patch\n*** Update File: f\n@@\n keep\n-a\n+b\n+a\n*** End Patch"
	add, rem := Patch(patch)
	aa, ar := ampDiff("keep\na", "keep\nb\na")
	if add != 2 || rem != 1 || aa != 1 || ar != 0 {
		t.Errorf("patch hunk: exporter +%d -%d, Amp +%d -%d; documented +2 -1 and +1 -0", add, rem, aa, ar)
	}
}
