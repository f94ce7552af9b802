package ledger

import (
	"slices"
	"time"
)

// Span is a stretch of time [Start, End) (epoch ms, UTC) whose spend a
// ledger keeps coarser than its buckets: a thread whose ledger reached
// its bound had the rows of each span merged into one, at the span's
// earliest bucket with spend. The spend of a span is in the right totals
// and somewhere in the span, no more precisely. The exporter coarsens
// within the hours and days of its own zone, so its days are exact; a day
// of another zone is exact unless a span crosses one of its midnights
// (InexactDays).
type Span struct {
	Start int64 `json:"start"`
	End   int64 `json:"end"`
}

// InexactDays lists (YYYY-MM-DD, in order) the days of loc whose spend a
// ledger with these coarsened spans may not have exactly: the days a span
// that crosses one of loc's midnights overlaps. A span within one day of
// loc keeps that day's spend in it.
func InexactDays(spans []Span, loc *time.Location) []string {
	var days []string
	for _, sp := range spans {
		if sp.End <= sp.Start {
			continue
		}
		first := time.UnixMilli(sp.Start).In(loc)
		last := time.UnixMilli(sp.End - 1).In(loc)
		if dayOf(first) == dayOf(last) {
			continue
		}
		y, m, d := first.Date()
		for day := time.Date(y, m, d, 12, 0, 0, 0, time.UTC); ; day = day.AddDate(0, 0, 1) {
			name := day.Format(time.DateOnly)
			days = append(days, name)
			if name >= dayOf(last) {
				break
			}
		}
	}
	slices.Sort(days)
	return slices.Compact(days)
}

// dayOf is the date of t in its own zone.
func dayOf(t time.Time) string { return t.Format(time.DateOnly) }
