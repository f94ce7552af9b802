package report

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"unicode/utf8"
)

// TableOptions say how a table is drawn.
type TableOptions struct {
	// Color draws the heading in cyan and the totals in yellow (ANSI);
	// the caller decides (a terminal, and NO_COLOR unset).
	Color bool
	// Compact leaves out the cache columns (ccusage's --compact, for a
	// narrow terminal); NoCost the dollars (ccusage's --no-cost).
	Compact, NoCost bool
}

// dropped reports whether the column named head is left out.
func (o TableOptions) dropped(head string) bool {
	switch head {
	case "Cache Create", "Cache Read":
		return o.Compact
	case "Cost (USD)":
		return o.NoCost
	}
	return false
}

// WriteTable writes the report as an aligned table, one model per line
// under its period, the totals last.
func WriteTable(w io.Writer, r *Report, o TableOptions) error {
	first := map[Kind]string{Daily: "Date", Monthly: "Month", Session: "Thread"}[r.Kind]
	head := []string{first, "Models", "Input", "Output", "Cache Create", "Cache Read", "Total Tokens", "Credits", "Cost (USD)", "Commits"}
	// rows of lines of cells
	var rows [][][]string
	for _, p := range r.Periods {
		lines := [][]string{cells(p.Key, p.Usage)}
		for i, m := range p.ModelsUsed() {
			if i == 0 {
				lines[0][1] = "- " + m
				continue
			}
			lines = append(lines, []string{"", "- " + m, "", "", "", "", "", "", "", ""})
		}
		rows = append(rows, lines)
	}
	total := cells("Total", r.Totals)
	// The columns left out go last, each line at once.
	var keep []int
	for i, h := range head {
		if !o.dropped(h) {
			keep = append(keep, i)
		}
	}
	pick := func(cs []string) []string {
		out := make([]string, len(keep))
		for j, i := range keep {
			out[j] = cs[i]
		}
		return out
	}
	head, total = pick(head), pick(total)
	for _, lines := range rows {
		for i := range lines {
			lines[i] = pick(lines[i])
		}
	}
	widths := make([]int, len(head))
	grow := func(cs []string) {
		for i, c := range cs {
			widths[i] = max(widths[i], utf8.RuneCountInString(c))
		}
	}
	grow(head)
	grow(total)
	for _, lines := range rows {
		for _, l := range lines {
			grow(l)
		}
	}
	rule := make([]string, len(head))
	for i, n := range widths {
		rule[i] = strings.Repeat("─", n)
	}
	var b strings.Builder
	line := func(cs []string, color string) {
		parts := make([]string, len(cs))
		for i, c := range cs {
			pad := strings.Repeat(" ", widths[i]-utf8.RuneCountInString(c))
			if i < 2 {
				parts[i] = c + pad
			} else {
				parts[i] = pad + c
			}
		}
		s := strings.TrimRight(strings.Join(parts, "  "), " ")
		if o.Color && color != "" {
			s = color + s + "\x1b[0m"
		}
		b.WriteString(s + "\n")
	}
	line(head, "\x1b[36m")
	line(rule, "")
	for _, lines := range rows {
		for _, l := range lines {
			line(l, "")
		}
	}
	line(rule, "")
	line(total, "\x1b[33m")
	if r.Undated.Tokens() > 0 {
		fmt.Fprintf(&b, "\n%s tokens without any time are in no period (see docs/report.md).\n", thousands(r.Undated.Tokens()))
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// cells are a row's figures.
func cells(key string, u Usage) []string {
	return []string{key, "", thousands(u.Input), thousands(u.Output), thousands(u.CacheCreation), thousands(u.CacheRead),
		thousands(u.Tokens()), strconv.FormatFloat(credits(u.Credits), 'f', 2, 64), "$" + strconv.FormatFloat(dollars(u.Cost), 'f', 2, 64),
		thousands(u.Commits)}
}

// thousands writes n with commas between groups of three digits.
func thousands(n int64) string {
	s := strconv.FormatInt(n, 10)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, r := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(r)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}
