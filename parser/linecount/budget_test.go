package linecount

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
)

// unrelated is n random lines of two letters: two of them share few lines
// in order, the diff that costs the most per byte.
func unrelated(r *rand.Rand, n int) string {
	var sb strings.Builder
	for range n {
		sb.WriteByte(byte('a' + r.IntN(26)))
		sb.WriteByte(byte('a' + r.IntN(26)))
		sb.WriteByte('\n')
	}
	return sb.String()
}

// TestLcsBitsSparseAgreesWithLcsBits on sides past maxBitsLines, where
// ampDiff's table would take hundreds of megabytes: lcsBits, held to it in
// TestMyersAgreesWithAmp, is the oracle at any size.
func TestLcsBitsSparseAgreesWithLcsBits(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	for _, c := range []struct{ n, m, alphabet int }{
		{4097, 4097, 676}, {5000, 4500, 3}, {8000, 4200, 20000}, {4500, 4500, 1},
	} {
		gen := func(n int) []string {
			s := make([]string, n)
			for i := range s {
				s[i] = fmt.Sprint(r.IntN(c.alphabet))
			}
			return s
		}
		a, b := gen(c.n), gen(c.m)
		want := lcsBits(a, b)
		for _, dense := range []int{1, (len(b) + 63) / 64, 1 << 30} {
			if l := lcsBitsSparse(a, b, dense); l != want {
				t.Errorf("%d×%d lines of %d: lcsBitsSparse(dense %d) = %d, lcsBits %d", c.n, c.m, c.alphabet, dense, l, want)
			}
		}
	}
}

// TestBudget: the work of many diffs under one budget is the budget and,
// past it, no more than the lines of the searches still made; an edit that
// needs no search (the lines left after the common prefix and suffix on
// one side only) or a search no dearer than its lines is counted exactly
// whatever is left; any other past the budget is uncounted.
func TestBudget(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 10))
	big1, big2 := unrelated(r, 4097), unrelated(r, 4097) // 266,305 word operations
	huge1, huge2 := unrelated(r, 9000), unrelated(r, 9000)
	for _, c := range []struct {
		name     string
		cells    int64
		old, new string
		want     Count
		maxWork  int64
	}{
		{"equal texts", 0, big1, big1, Exact, 0},
		{"lines appended: no search", 0, big1, big1 + "x\ny\n", Exact, 0},
		{"lines removed in the middle: no search", 0, "a\nb\nc\nd", "a\nd", Exact, 0},
		{"one line changed: its search costs a line", 0, big1 + "x\n" + big2, big1 + "y\n" + big2, Exact, 1},
		{"a line against two: no dearer than its lines", 0, "a\nx\nb", "a\ny\nz\nb", Exact, 2},
		{"a few lines each side, nothing left", 0, "a\nb\nc\nd", "d\nc\nb\na", Uncounted, 0},
		{"4,097 lines each side, nothing left", 0, big1, big2, Uncounted, 0},
		{"4,097 lines each side, room for it", 1 << 19, big1, big2, Exact, 266_305},
		{"4,097 lines each side, one cell short", 266_304, big1, big2, Uncounted, 0},
		{"9,000 lines each side: Myers to MaxCells", 1 << 30, huge1, huge2, Approximate, MaxCells + 18_002},
		{"9,000 lines each side: Myers to the budget", 1 << 20, huge1, huge2, Uncounted, 1<<20 + 18_002},
	} {
		b := NewBudget(c.cells)
		add, rem, got := b.Diff(c.old, c.new)
		if got != c.want || b.Used() > c.maxWork || c.want == Exact && b.Used() != c.maxWork {
			t.Errorf("%s: %d after %d cells, want %d within %d", c.name, got, b.Used(), c.want, c.maxWork)
		}
		wa, wr, exact := Diff(c.old, c.new)
		if got != Uncounted && (add != wa || rem != wr || exact != (got == Exact)) || got == Uncounted && add+rem != 0 {
			t.Errorf("%s: +%d -%d (%d), Diff +%d -%d exact %v", c.name, add, rem, got, wa, wr, exact)
		}
	}
}

// TestMyersWithinBudget: whatever its budget, Myers' search (which sizes
// its diagonals by the rows the budget allows) gives Amp's distance when
// it finishes and gives up only past its budget; rowsWithin is the least
// row count whose cells overrun a budget.
func TestMyersWithinBudget(t *testing.T) {
	for budget := range int64(2000) {
		d := int64(rowsWithin(budget))
		if (d+1)*(d+2)/2 <= budget || d > 0 && d*(d+1)/2 > budget {
			t.Fatalf("rowsWithin(%d) = %d", budget, d)
		}
	}
	r := rand.New(rand.NewPCG(11, 12))
	for i := range 2000 {
		var a, b []string
		for range 1 + r.IntN(40) {
			a = append(a, string(rune('a'+r.IntN(5))))
		}
		for range 1 + r.IntN(40) {
			b = append(b, string(rune('a'+r.IntN(5))))
		}
		na, nr := ampDiff(strings.Join(a, "\n"), strings.Join(b, "\n"))
		budget := int64(r.IntN(400))
		d, ok, work := myers(a, b, budget)
		if ok && int64(d) != na+nr || !ok && work <= budget {
			t.Fatalf("case %d: myers(%q, %q, %d) = %d %v after %d cells, Amp %d", i, a, b, budget, d, ok, work, na+nr)
		}
	}
}
