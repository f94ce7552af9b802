package report

import (
	"bytes"
	"encoding/json"
	"math"
	"regexp"
	"testing"
	"time"
)

// Two messages of 4e18 tokens (input and cache reads each) and a cost at
// the store's top: every sum of the report saturates as the exporter's
// counters do, and nothing prints a negative figure.
func TestReportSumsSaturate(t *testing.T) {
	const big = 4_000_000_000_000_000_000
	row := func(at, session string) Entry {
		return Entry{Start: ms(at), Session: session, Model: "m", Repo: "github.com/a/b",
			Usage: Usage{Input: big, CacheRead: big, Credits: math.MaxInt64 / 2, Cost: math.MaxInt64/2 + 1}}
	}
	l := NewLedger()
	for _, e := range []Entry{
		row("2026-02-01T10:00:00Z", "T-a"), row("2026-02-01T10:00:00Z", "T-a"), // one row, added
		row("2026-02-01T11:00:00Z", "T-b"), row("2026-02-02T11:00:00Z", "T-b"),
	} {
		l.Add(e)
	}
	for _, kind := range []Kind{Daily, Monthly, Session} {
		t.Run(string(kind), func(t *testing.T) {
			r, err := Build(l.Entries(), Options{Kind: kind, Location: time.UTC})
			if err != nil {
				t.Fatal(err)
			}
			want := Usage{Input: math.MaxInt64, CacheRead: math.MaxInt64, Credits: math.MaxInt64, Cost: math.MaxInt64}
			if r.Totals != want || r.Totals.Tokens() != math.MaxInt64 {
				t.Errorf("totals %+v (tokens %d), want %+v", r.Totals, r.Totals.Tokens(), want)
			}
			for _, p := range r.Periods {
				if p.Tokens() <= 0 || p.Cost <= 0 || p.Models["m"].Tokens() <= 0 || p.Repos["github.com/a/b"].Cost <= 0 {
					t.Errorf("%s: %+v", p.Key, p.Usage)
				}
			}
			var js, table bytes.Buffer
			if err := WriteJSON(&js, r); err != nil {
				t.Fatal(err)
			}
			if err := WriteTable(&table, r, TableOptions{}); err != nil {
				t.Fatal(err)
			}
			var doc struct {
				Totals struct {
					TotalTokens int64   `json:"totalTokens"`
					TotalCost   float64 `json:"totalCost"`
				} `json:"totals"`
			}
			if err := json.Unmarshal(js.Bytes(), &doc); err != nil {
				t.Fatal(err)
			}
			if doc.Totals.TotalTokens != math.MaxInt64 || doc.Totals.TotalCost < 9e8 {
				t.Errorf("JSON totals %+v", doc.Totals)
			}
			if negative := regexp.MustCompile(`(^|[\s$:])-\d`); negative.Match(js.Bytes()) || negative.MatchString(table.String()) {
				t.Errorf("a negative figure:\n%s\n%s", js.String(), table.String())
			}
		})
	}
}
