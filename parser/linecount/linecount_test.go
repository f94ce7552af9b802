package linecount

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
)

func TestLines(t *testing.T) {
	for _, c := range []struct {
		s    string
		want int64
	}{
		{"", 1},           // a file created empty: one empty line, as Amp shows it
		{"\n", 1},         // one empty line
		{"a", 1},          // no trailing newline: still a line
		{"a\nb", 2},       // the last line lacks its newline
		{"a\nb\n", 2},     // the last newline opens no line
		{"a\r\nb\r\n", 2}, // CRLF is one line break
		{"a\r\nb", 2},     // CRLF, last line without one
		{"\n\n\n", 3},     // three empty lines
		{"a\rb\rc", 1},    // a lone CR breaks no line
	} {
		if got := Lines(c.s); got != c.want {
			t.Errorf("Lines(%q) = %d, want %d", c.s, got, c.want)
		}
	}
}

func TestDiffGolden(t *testing.T) {
	for _, c := range []struct {
		name     string
		old, new string
		add, rem int64 // counted by hand, checked against ampDiff; the reason is in the name
	}{
		{"identical", "a\nb\n", "a\nb\n", 0, 0},
		{"one line changed", "a\nb\nc", "a\nB\nc", 1, 1},
		{"whitespace only: the changed lines count", "if x {\n\treturn\n}", "if x {\n    return\n}", 1, 1},
		{"trailing space only", "a\nb", "a \nb", 1, 1},
		{"insertion", "a\nc", "a\nb\nc", 1, 0},
		{"deletion", "a\nb\nc", "a\nc", 0, 1},
		{"old empty, new ends with a line break: new lines added", "", "x\ny\n", 2, 0},
		{"old empty: its empty line replaced", "", "x", 1, 1},
		{"new empty: old lines replaced by an empty line", "x\ny", "", 1, 2},
		{"new empty, old ends with a line break", "x\ny\n", "", 0, 2},
		{"CRLF to LF changes every line", "a\r\nb\r\n", "a\nb\n", 2, 2},
		{"CRLF file, one line changed", "a\r\nb\r\nc\r\n", "a\r\nB\r\nc\r\n", 1, 1},
		{"a last line break added: an empty last line added", "a\nb", "a\nb\n", 1, 0},
		{"a last line break removed: an empty last line removed", "a\nb\n", "a\nb", 0, 1},
		{"a last line break on both sides", "a\nb\n", "a\nB\n", 1, 1},
		{"moved line: removed and added", "a\nb\nc", "b\nc\na", 1, 1},
		{"single-line str replace", "foo(x)", "foo(x, y)", 1, 1},
	} {
		add, rem, exact := Diff(c.old, c.new)
		if add != c.add || rem != c.rem || !exact {
			t.Errorf("%s: Diff = +%d -%d exact %v, want +%d -%d", c.name, add, rem, exact, c.add, c.rem)
		}
		if na, nr := ampDiff(c.old, c.new); na != c.add || nr != c.rem {
			t.Errorf("%s: ampDiff gives +%d -%d: the hand count is wrong", c.name, na, nr)
		}
	}
}

// TestDiffAgreesWithAmpOnRandomEdits compares Diff with ampDiff (the
// CLI's count by the O(N·M) table) on random edits of small alphabets
// (many repeated lines: the hard case for a greedy search), with and
// without a last line break on either side.
func TestDiffAgreesWithAmpOnRandomEdits(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	gen := func() string {
		var sb strings.Builder
		for range r.IntN(30) {
			sb.WriteString(string(rune('a' + r.IntN(4))))
			if r.IntN(5) == 0 {
				sb.WriteString(" ")
			}
			sb.WriteString("\n")
		}
		s := sb.String()
		if r.IntN(3) == 0 {
			s = strings.TrimSuffix(s, "\n")
		}
		return s
	}
	for i := range 3000 {
		old, new := gen(), gen()
		add, rem, exact := Diff(old, new)
		na, nr := ampDiff(old, new)
		if add != na || rem != nr || !exact {
			t.Fatalf("case %d: Diff(%q, %q) = +%d -%d (exact %v), ampDiff +%d -%d", i, old, new, add, rem, exact, na, nr)
		}
	}
}

func TestPatchGolden(t *testing.T) {
	// A patch that adds, updates, moves and deletes files. Counted by hand:
	// new.go adds 3 lines (the empty "+" line too); a.go's hunk adds 2 and
	// removes 1, its " keep" context lines count nothing; old.go moves to
	// moved.go with one line changed (+1 -1); gone.go is deleted: the
	// patch holds none of its lines, so 0. Total +6 -2.
	patch := "*** Begin Patch\n" +
		"*** Add File: new.go\n" +
		"+package x\n" +
		"+\n" +
		"+func F() {}\n" +
		"*** Update File: a.go\n" +
		"@@ func G()\n" +
		" keep\n" +
		"-old\n" +
		"+new\n" +
		"+also new\n" +
		" keep\n" +
		"*** Update File: old.go\n" +
		"*** Move to: moved.go\n" +
		"@@\n" +
		"-x := 1\n" +
		"+x := 2\n" +
		"*** End of File\n" +
		"*** Delete File: gone.go\n" +
		"*** End Patch"
	add, rem := Patch(patch)
	if add != 6 || rem != 2 {
		t.Errorf("Patch = +%d -%d, want +6 -2", add, rem)
	}
	// The same patch with CRLF line breaks counts the same.
	add, rem = Patch(strings.ReplaceAll(patch, "\n", "\r\n"))
	if add != 6 || rem != 2 {
		t.Errorf("CRLF patch = +%d -%d, want +6 -2", add, rem)
	}
	// A move alone changes no line; a delete alone counts none.
	if a, r := Patch("*** Begin Patch\n*** Update File: a\n*** Move to: b\n*** Delete File: c\n*** End Patch\n"); a != 0 || r != 0 {
		t.Errorf("move and delete = +%d -%d, want 0 0", a, r)
	}
	// A whitespace-only hunk counts its lines.
	if a, r := Patch("*** Begin Patch\n*** Update File: a\n@@\n-\tx\n+    x\n*** End Patch"); a != 1 || r != 1 {
		t.Errorf("whitespace hunk = +%d -%d, want 1 1", a, r)
	}
	// +/- lines outside any section are not the patch's.
	if a, r := Patch("+stray\n-stray\n*** Begin Patch\n+stray\n*** End Patch\n+after"); a != 0 || r != 0 {
		t.Errorf("stray lines = +%d -%d, want 0 0", a, r)
	}
}

// scattered makes a file of n numbered lines and a copy with every
// step-th line changed, inserted or removed.
func scattered(n, step int) (old, new string, add, rem int64) {
	var a, b strings.Builder
	for i := range n {
		line := fmt.Sprintf("\tline %d of the source file, with some code: x := f(%d)\n", i, i)
		a.WriteString(line)
		switch {
		case i%step != 0 || i == 0:
			b.WriteString(line)
		case (i/step)%3 == 0: // changed
			b.WriteString("\tchanged " + line[1:])
			add++
			rem++
		case (i/step)%3 == 1: // removed
			rem++
		default: // a line inserted before it
			b.WriteString("\tinserted\n" + line)
			add++
		}
	}
	return a.String(), b.String(), add, rem
}

func TestDiffLargeScattered(t *testing.T) {
	old, new, add, rem := scattered(40_000, 97) // ~2.3 MB each
	a, r, exact := Diff(old, new)
	if a != add || r != rem || !exact {
		t.Errorf("Diff = +%d -%d exact %v, want +%d -%d (built so)", a, r, exact, add, rem)
	}
}

// TestDiffFallsBackPastMaxCells: two unrelated 20 000-line files need
// N+M × D = 40 000 × 40 000 cells, past MaxCells; the approximation (lines
// the other side lacks) is then exact here, as no line is common.
func TestDiffFallsBackPastMaxCells(t *testing.T) {
	var a, b strings.Builder
	for i := range 20_000 {
		fmt.Fprintf(&a, "a%d\n", i)
		fmt.Fprintf(&b, "b%d\n", i)
	}
	add, rem, exact := Diff(a.String(), b.String())
	if exact || add != 20_000 || rem != 20_000 {
		t.Errorf("Diff = +%d -%d exact %v, want +20000 -20000 approximate", add, rem, exact)
	}
}

func BenchmarkDiff2MBScattered(b *testing.B) {
	old, new, _, _ := scattered(40_000, 97)
	b.SetBytes(int64(len(old) + len(new)))
	b.ReportAllocs()
	for b.Loop() {
		Diff(old, new)
	}
}

func BenchmarkDiff2MBWorstCase(b *testing.B) {
	var x, y strings.Builder
	for i := range 40_000 {
		fmt.Fprintf(&x, "a%d\n", i)
		fmt.Fprintf(&y, "b%d\n", i)
	}
	old, new := x.String(), y.String()
	b.SetBytes(int64(len(old) + len(new)))
	b.ReportAllocs()
	for b.Loop() {
		Diff(old, new)
	}
}

// FuzzDiff compares Diff with ampDiff, the CLI's own count, on small
// inputs, and checks invariants any line diff keeps on all.
func FuzzDiff(f *testing.F) {
	f.Add("a\nb\nc", "a\nB\nc")
	f.Add("", "x\n")
	f.Add("", "x")
	f.Add("a\nb", "a\nb\n")
	f.Add("a\r\nb", "a\nb")
	f.Fuzz(func(t *testing.T, old, new string) {
		add, rem, exact := Diff(old, new)
		// The lines Amp sees: JavaScript's split gives one more than the
		// "\n"s.
		jsLines := func(s string) int64 { return int64(strings.Count(s, "\n")) + 1 }
		if add < 0 || rem < 0 || add > jsLines(new) || rem > jsLines(old) {
			t.Fatalf("Diff = +%d -%d for %d → %d lines", add, rem, jsLines(old), jsLines(new))
		}
		if jsLines(old)-rem != jsLines(new)-add {
			t.Fatalf("unchanged lines differ: %d-%d vs %d-%d", jsLines(old), rem, jsLines(new), add)
		}
		if a, r, _ := Diff(old, old); a != 0 || r != 0 {
			t.Fatalf("identical = +%d -%d", a, r)
		}
		if a, r, e := Diff(new, old); a != rem || r != add || e != exact {
			t.Fatalf("swapped = +%d -%d, want +%d -%d", a, r, rem, add)
		}
		if len(old) < 200 && len(new) < 200 {
			if aa, ar := ampDiff(old, new); !exact || aa != add || ar != rem {
				t.Fatalf("Diff(%q, %q) = +%d -%d (exact %v), Amp +%d -%d", old, new, add, rem, exact, aa, ar)
			}
		}
		if Lines(old) != ampLines(old) {
			t.Fatalf("Lines(%q) = %d, Amp %d", old, Lines(old), ampLines(old))
		}
		// Under a budget: exact as Diff, or uncounted; never another count.
		for _, cells := range []int64{0, 1, 8, 1 << 20} {
			bud := NewBudget(cells)
			if a, r, c := bud.Diff(old, new); c == Uncounted && (a != 0 || r != 0) || c != Uncounted && (a != add || r != rem || (c == Exact) != exact) {
				t.Fatalf("budget %d: +%d -%d (%d), Diff +%d -%d (exact %v)", cells, a, r, c, add, rem, exact)
			}
		}
		a, b := strings.Split(old, "\n"), strings.Split(new, "\n")
		for _, dense := range []int{1, 2, 1 << 30} {
			if l, want := lcsBitsSparse(a, b, dense), lcsBits(a, b); l != want {
				t.Fatalf("lcsBitsSparse(%q, %q, %d) = %d, lcsBits %d", a, b, dense, l, want)
			}
		}
		pa, pr := Patch(old)
		if pa > Lines(old) || pr > Lines(old) || pa < 0 || pr < 0 {
			t.Fatalf("Patch = +%d -%d of %d lines", pa, pr, Lines(old))
		}
	})
}

// TestMyersAgreesWithAmp: Diff takes the bit-parallel path for small
// edits, so Myers' search and the two LCS are checked here on their own
// against ampDiff (whose table is the textbook LCS).
func TestMyersAgreesWithAmp(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for i := range 3000 {
		var a, b []string
		for range 1 + r.IntN(30) {
			a = append(a, string(rune('a'+r.IntN(4))))
		}
		for range 1 + r.IntN(30) {
			b = append(b, string(rune('a'+r.IntN(4))))
		}
		d, ok, _ := myers(a, b, MaxCells)
		na, nr := ampDiff(strings.Join(a, "\n"), strings.Join(b, "\n"))
		if !ok || int64(d) != na+nr {
			t.Fatalf("case %d: myers(%q, %q) = %d, ampDiff +%d -%d", i, a, b, d, na, nr)
		}
		if l := lcsBits(a, b); l != len(b)-int(na) {
			t.Fatalf("case %d: lcsBits(%q, %q) = %d, Amp's LCS %d", i, a, b, l, len(b)-int(na))
		}
		if l := lcsWord(a, b); l != len(b)-int(na) {
			t.Fatalf("case %d: lcsWord(%q, %q) = %d, Amp's LCS %d", i, a, b, l, len(b)-int(na))
		}
		for _, dense := range []int{1, 2, 3, 1 << 30} { // every line a mask, some, none
			if l := lcsBitsSparse(a, b, dense); l != len(b)-int(na) {
				t.Fatalf("case %d: lcsBitsSparse(%q, %q, %d) = %d, Amp's LCS %d", i, a, b, dense, l, len(b)-int(na))
			}
		}
	}
}

// BenchmarkDiffTypicalEdit: two unrelated 60-line snippets, the
// generator's edits (the bit-parallel path).
func BenchmarkDiffTypicalEdit(b *testing.B) {
	r := rand.New(rand.NewPCG(5, 6))
	snippet := func() string {
		var sb strings.Builder
		for range 60 {
			fmt.Fprintf(&sb, "\tx%d := f(y)\n", r.IntN(40))
		}
		return sb.String()
	}
	old, new := snippet(), snippet()
	b.ReportAllocs()
	for b.Loop() {
		Diff(old, new)
	}
}
