package spend

import (
	"math"
	"testing"
	"time"

	"github.com/amp-exporter/amp-exporter/ledger"
)

// hugeSpend is a day of two threads, each with usage at the top of what
// the store counts (4e18 input and cache-read tokens, a cost just over
// half the largest int64), billed as much, and as much again undated.
func hugeSpend(now time.Time) Input {
	const big = 4_000_000_000_000_000_000
	u := ledger.Usage{Input: big, CacheRead: big, Cost: math.MaxInt64/2 + 1}
	start := ledger.StartOf(now.Add(-time.Hour).UnixMilli())
	var in Input
	for _, e := range []ledger.Entry{
		{Start: start, Session: "T-1", Model: "m", Repo: "r", Usage: u},
		{Start: start, Session: "T-2", Model: "m", Repo: "r", Usage: u},
		{Start: ledger.Undated, Session: "T-3", Model: "m", Usage: u},
		{Start: ledger.Undated, Session: "T-4", Model: "m", Usage: u},
	} {
		in.Entries = append(in.Entries, e)
		in.Bills = append(in.Bills, ledger.Bill{Start: start, End: start + ledger.BucketMs, Session: e.Session, USD: math.MaxInt64/2 + 1})
	}
	in.BillsKnown, in.Location, in.Now = true, time.UTC, now
	return in
}

// Every figure of a summary saturates as the store's sums do: two threads
// at the top are not a negative day.
func TestSummarizeSumsSaturate(t *testing.T) {
	now := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
	s := Summarize(hugeSpend(now))
	today := s.Days[ChartDays-1]
	if len(s.Repositories) != 1 || len(today.Models) != 1 {
		t.Fatalf("repositories %+v, today's models %v", s.Repositories, today.Models)
	}
	for name, v := range map[string]int64{
		"today": s.Today.Estimated, "last 7 days": s.Last7.Estimated, "month": s.Month.Estimated,
		"today billed": *s.Today.Billed, "last 7 days billed": *s.Last7.Billed, "month billed": *s.Month.Billed,
		"today's tokens": today.Tokens, "today's model": today.Models[0], "repository": s.Repositories[0].Estimated,
		"undated": s.Undated,
	} {
		if v != math.MaxInt64 {
			t.Errorf("%s: %d, want %d", name, v, int64(math.MaxInt64))
		}
	}
	j := s.JSON()
	for name, v := range map[string]float64{"today": j.Today.EstimatedUSD, "month": j.Month.EstimatedUSD, "month billed": *j.Month.BilledUSD} {
		if v < 9e8 {
			t.Errorf("/api/spend's %s: $%v", name, v)
		}
	}
}
