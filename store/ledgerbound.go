package store

import (
	"cmp"
	"encoding/json"
	"math"
	"slices"
	"time"

	"github.com/amp-exporter/amp-exporter/internal/sat"
	"github.com/amp-exporter/amp-exporter/ledger"
)

// How a thread's ledger is kept within its bound (maxLedgerRows) without
// moving spend to another day.
//
// A quarter hour is the only unit that adds up to the days of every zone
// (zones are whole quarter hours from UTC, and their midnights fall on
// every quarter hour of UTC's day but a few), so no coarser bucket is
// safe for all of them. The ledger is coarsened in the days of one zone,
// the exporter's (ledger.timezone, SetLedgerZone): beyond the bound the
// oldest days of a thread keep one row per series and hour of that zone,
// then, if that is not enough, one per day, then the oldest days one row
// between them (a thread of years). The days of that zone stay exact
// until the last step; each merged stretch is recorded (coarseSpan), so a
// day of another zone that a merged stretch crosses can be told apart
// (ledger.InexactDays).

// coarseSpan is a stretch of buckets [from, to) of a thread whose rows
// were merged: its spend is at the stretch's earliest bucket with spend,
// and may have been spent anywhere in it.
type coarseSpan struct{ from, to int32 }

// ledgerSlack is the share of the bound a coarsening frees beyond what it
// must (an eighth), so that a thread at its bound is not coarsened again
// at every new quarter hour.
const ledgerSlack = 8

// coarsenLedger keeps rows (sorted, as a thread's ledger) within bound
// rows (0: no bound), coarsening its oldest days in zone's days as little
// as it can, and returns the thread's coarsened spans with those it adds.
// Sums per series stay exact; a row without a time is never merged.
func coarsenLedger(rows threadLedger, spans []coarseSpan, bound int, zone *time.Location) (threadLedger, []coarseSpan) {
	if bound <= 0 || len(rows) <= bound {
		return rows, spans
	}
	if zone == nil {
		zone = time.UTC
	}
	c := newCoarsening(rows, zone)
	target := bound - bound/ledgerSlack
	// Each step coarsens the oldest k days one level more than the rest
	// (levels: quarter hour, hour, day, all in one); more days coarsened
	// never leave more rows, so the least k that fits is found by halving.
	var lv levels
	steps := []func(l *levels) *int{
		func(l *levels) *int { return &l.hourly },
		func(l *levels) *int { return &l.daily },
		func(l *levels) *int { return &l.together },
	}
	for _, field := range steps {
		k, ok := c.fewestDays(target, func(k int) levels {
			l := lv
			*field(&l) = k
			return l
		})
		*field(&lv) = k
		if ok {
			break
		}
	}
	out, added := c.apply(lv)
	return out, mergeSpans(append(slices.Clone(spans), added...))
}

// levels say how coarse each of the thread's days is: the oldest together
// days are one stretch, the oldest daily one row a day, the oldest hourly
// one row an hour; together <= daily <= hourly.
type levels struct{ hourly, daily, together int }

// place is where a dated bucket falls in the zone.
type place struct {
	day              int   // index of the bucket's day among the thread's, oldest first
	hourFrom, hourTo int32 // the bucket's hour in the zone (within its day)
}

// coarsening is a thread's rows with the day and hour of each.
type coarsening struct {
	rows   threadLedger
	places []place // one per row; unused for undated rows
	days   []coarseSpan
}

func newCoarsening(rows threadLedger, zone *time.Location) *coarsening {
	c := &coarsening{rows: rows, places: make([]place, len(rows))}
	var buckets []int32
	for _, r := range rows {
		if r.b != undatedBucket {
			buckets = append(buckets, r.b)
		}
	}
	slices.Sort(buckets)
	buckets = slices.Compact(buckets)
	at := make([]place, len(buckets))
	for i, b := range buckets {
		t := time.UnixMilli(startOf(b)).In(zone)
		if n := len(c.days); n == 0 || b >= c.days[n-1].to {
			y, m, d := t.Date()
			from := bucketFloor(time.Date(y, m, d, 0, 0, 0, 0, zone).UnixMilli())
			to := bucketCeil(time.Date(y, m, d+1, 0, 0, 0, 0, zone).UnixMilli())
			c.days = append(c.days, coarseSpan{min(from, b), max(to, b+1)})
		}
		day := len(c.days) - 1
		// The hour's start is found by the zone's minutes, not by
		// time.Date, which may give either of an hour that is repeated
		// when summer time ends.
		hourStart := t.UnixMilli() - int64(t.Minute())*60_000 - int64(t.Second())*1000
		from := max(bucketFloor(hourStart), c.days[day].from)
		to := min(bucketCeil(hourStart+3_600_000), c.days[day].to)
		at[i] = place{day, min(from, b), max(to, b+1)}
	}
	for i, r := range rows {
		if r.b != undatedBucket {
			j, _ := slices.BinarySearch(buckets, r.b)
			c.places[i] = at[j]
		}
	}
	return c
}

// bucketFloor and bucketCeil are the buckets a time (epoch ms) falls in
// and the first that starts at or after it.
func bucketFloor(ms int64) int32 {
	return int32(max(min(ms/ledger.BucketMs, math.MaxInt32), math.MinInt32+1))
}

func bucketCeil(ms int64) int32 {
	return bucketFloor(ms + ledger.BucketMs - 1)
}

// group is the stretch row i is merged within at levels lv; a stretch of
// one bucket for a row that is kept as it is.
func (c *coarsening) group(i int, lv levels) coarseSpan {
	p, b := c.places[i], c.rows[i].b
	switch {
	case p.day < lv.together:
		return coarseSpan{c.days[0].from, c.days[lv.together-1].to}
	case p.day < lv.daily:
		return c.days[p.day]
	case p.day < lv.hourly:
		return coarseSpan{p.hourFrom, p.hourTo}
	}
	return coarseSpan{b, b + 1}
}

// count is how many rows the thread keeps at levels lv. A series' rows
// come in time order, and so do their stretches.
func (c *coarsening) count(lv levels) int {
	n := 0
	var last coarseSpan
	for i, r := range c.rows {
		if r.b == undatedBucket {
			n++
			continue
		}
		g := c.group(i, lv)
		if i == 0 || r.id != c.rows[i-1].id || c.rows[i-1].b == undatedBucket || g != last {
			n++
		}
		last = g
	}
	return n
}

// fewestDays is the least k for which at(k) keeps at most target rows,
// and whether there is one (else k is every day).
func (c *coarsening) fewestDays(target int, at func(k int) levels) (int, bool) {
	if c.count(at(len(c.days))) > target {
		return len(c.days), false
	}
	lo, hi := 0, len(c.days)
	for lo < hi {
		mid := (lo + hi) / 2
		if c.count(at(mid)) <= target {
			hi = mid
		} else {
			lo = mid + 1
		}
	}
	return lo, true
}

// apply merges the rows at levels lv, each group into its earliest row,
// and returns the stretches in which two rows or more were merged.
func (c *coarsening) apply(lv levels) (threadLedger, []coarseSpan) {
	out := make(threadLedger, 0, c.count(lv))
	var added []coarseSpan
	var last coarseSpan
	merged := false
	for i, r := range c.rows {
		g := coarseSpan{}
		if r.b != undatedBucket {
			g = c.group(i, lv)
		}
		if n := len(out); r.b != undatedBucket && n > 0 && out[n-1].id == r.id && out[n-1].b != undatedBucket && g == last {
			out[n-1].v = sat.Add(out[n-1].v, r.v)
			if !merged {
				added, merged = append(added, g), true
			}
			continue
		}
		out = append(out, r)
		last, merged = g, false
	}
	return out, added
}

// mergeSpans sorts spans and makes overlapping ones one (spans of two
// zones, after ledger.timezone changed, overlap: their union is what is
// known); spans that only touch stay apart.
func mergeSpans(spans []coarseSpan) []coarseSpan {
	if len(spans) == 0 {
		return nil
	}
	slices.SortFunc(spans, func(a, b coarseSpan) int { return cmp.Or(cmp.Compare(a.from, b.from), cmp.Compare(a.to, b.to)) })
	out := spans[:1]
	for _, sp := range spans[1:] {
		if n := len(out); sp.from < out[n-1].to {
			out[n-1].to = max(out[n-1].to, sp.to)
			continue
		}
		out = append(out, sp)
	}
	return slices.Clip(out)
}

// inSpans reports whether bucket b is in one of spans (sorted, apart).
func inSpans(spans []coarseSpan, b int32) bool {
	i, found := slices.BinarySearchFunc(spans, b, func(sp coarseSpan, b int32) int { return cmp.Compare(sp.from, b) })
	if found {
		return true
	}
	return i > 0 && b < spans[i-1].to
}

// CoarseSpan is one persisted coarsened stretch: [from, to) in buckets
// (epoch ms / ledger.BucketMs).
type CoarseSpan [2]int64

// UnmarshalJSON reads a stretch leniently, as LedgerRow reads a row: one
// that is not two integers (a damaged state) reads as one coarseSpansOf
// leaves out, so that it costs the thread its stretch, not its counters.
func (c *CoarseSpan) UnmarshalJSON(data []byte) error {
	var raw []json.Number
	*c = CoarseSpan{0, 0} // refused by coarseSpansOf
	if err := json.Unmarshal(data, &raw); err != nil || len(raw) != 2 {
		return nil
	}
	var sp CoarseSpan
	for i, n := range raw {
		v, err := n.Int64()
		if err != nil {
			return nil
		}
		sp[i] = v
	}
	*c = sp
	return nil
}

// coarseStateOf is a thread's coarsened stretches in their persisted form.
func coarseStateOf(spans []coarseSpan) []CoarseSpan {
	if len(spans) == 0 {
		return nil
	}
	out := make([]CoarseSpan, len(spans))
	for i, sp := range spans {
		out[i] = CoarseSpan{int64(sp.from), int64(sp.to)}
	}
	return out
}

// coarseSpansOf restores a thread's coarsened stretches, leaving out (bad)
// those that do not check out: empty, before Amp began, beyond the
// buckets a ledger can hold.
func coarseSpansOf(saved []CoarseSpan) ([]coarseSpan, bool) {
	bad := false
	var out []coarseSpan
	for _, sp := range saved {
		if sp[0] >= sp[1] || sp[0] < int64(ampBeganBucket) || sp[1] > math.MaxInt32 {
			bad = true
			continue
		}
		out = append(out, coarseSpan{int32(sp[0]), int32(sp[1])})
	}
	return mergeSpans(out), bad
}

// LedgerCoarsened returns the stretches of time some thread's ledger was
// coarsened over to keep it within its bound (ledger.Span), sorted, the
// overlapping ones as one. Safe for concurrent use.
func (s *ThreadStore) LedgerCoarsened() []ledger.Span {
	var spans []coarseSpan
	s.mu.RLock()
	for _, rec := range s.threads {
		spans = append(spans, rec.coarse()...)
	}
	s.mu.RUnlock()
	spans = mergeSpans(spans)
	out := make([]ledger.Span, len(spans))
	for i, sp := range spans {
		out[i] = ledger.Span{Start: startOf(sp.from), End: startOf(sp.to)}
	}
	return out
}
