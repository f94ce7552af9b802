package thread

import (
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/amp-exporter/amp-exporter/parser/linecount"
)

// unrelatedText is n random lines of two letters (676 of them, so that
// lines repeat and the two sides of an edit share few in order): the edit
// whose diff costs the most per byte.
func unrelatedText(r *rand.Rand, n int) string {
	var sb strings.Builder
	for range n {
		sb.WriteByte(byte('a' + r.IntN(26)))
		sb.WriteByte(byte('a' + r.IntN(26)))
		sb.WriteByte('\n')
	}
	return sb.String()
}

// bigEdits is a thread of n edit_file calls, each replacing lines
// unrelated lines by as many others, and the old and new texts.
func bigEdits(t testing.TB, n, lines int) (doc []byte, olds, news []string) {
	r := rand.New(rand.NewPCG(uint64(n), uint64(lines)))
	calls := make([]call, n)
	for i := range calls {
		o, w := unrelatedText(r, lines), unrelatedText(r, lines)
		olds, news = append(olds, o), append(news, w)
		calls[i] = call{name: "edit_file", status: "done",
			input: map[string]any{"path": "/w/f.txt", "old_str": o, "new_str": w}}
	}
	return editThread(t, calls), olds, news
}

// TestDiffWorkPerParseIsBounded: linecount.MaxCells bounds one diff, not
// a thread, so a thread of many costly edits cost seconds to minutes of CPU
// at every parse. The work one parse spends on diffs (Parser.DiffWork, the
// cells linecount's searches visit) is at most MaxDiffWork, and past it no
// more than the lines of the edits it still diffed; every edit_file call is
// either counted as the unbounded Diff counts it, or left uncounted with
// its reason. The first case is the 2 MB thread (80 edits of 4,097
// lines), which the bit-parallel LCS counts exactly within the budget; the
// second's edits are past the bit-parallel LCS, and Myers' search for each
// runs out of MaxCells (Approximate) until the budget is spent.
func TestDiffWorkPerParseIsBounded(t *testing.T) {
	for _, c := range []struct {
		name              string
		edits, lines      int
		uncounted, approx bool // some edits are uncounted, some approximate
		counted           int  // at least this many edits counted
	}{
		{name: "80 edits of 4,097 lines", edits: 80, lines: 4097, counted: 80},
		{name: "4 edits of 9,000 lines", edits: 4, lines: 9000, uncounted: true, approx: true, counted: 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			doc, olds, news := bigEdits(t, c.edits, c.lines)
			p := NewParser()
			th, err := p.ParseBytes(doc)
			if err != nil {
				t.Fatal(err)
			}
			// Every line of every edit, both sides: what splitting them
			// cost, the most the searches made past the budget may add.
			lines := int64(2 * c.edits * (c.lines + 1))
			if w := p.DiffWork(); w > MaxDiffWork+lines {
				t.Errorf("one parse spent %d cells on diffs, want at most %d + %d lines", w, MaxDiffWork, lines)
			}
			var counted, uncounted, approx int
			for i, it := range edits(t, th) {
				if !it.Lines && it.Uncounted == UncountedDiffBudget {
					uncounted++
					continue
				}
				add, rem, exact := linecount.Diff(olds[i], news[i])
				if !it.Lines || it.Uncounted != "" || it.Added != add || it.Removed != rem {
					t.Errorf("edit %d: lines %v +%d -%d uncounted %q; Diff gives +%d -%d", i, it.Lines, it.Added, it.Removed, it.Uncounted, add, rem)
					continue
				}
				counted++
				if !exact {
					approx++
				}
			}
			if counted+uncounted != c.edits || counted < c.counted || (uncounted > 0) != c.uncounted || (approx > 0) != c.approx {
				t.Errorf("%d edits: %d counted (%d approximate), %d uncounted; want at least %d counted, uncounted %v, approximate %v",
					c.edits, counted, approx, uncounted, c.counted, c.uncounted, c.approx)
			}
		})
	}
}

// edits are the items of th's edit_file calls, in order.
func edits(t *testing.T, th *Thread) []Item {
	t.Helper()
	var out []Item
	for _, it := range Summarize(th).Items {
		if it.IsTool() && it.Tool == "Edit" {
			out = append(out, it)
		}
	}
	return out
}
