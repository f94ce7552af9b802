package report

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
)

func ms(s string) int64 {
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		panic(err)
	}
	return t.UnixMilli()
}

func zone(t *testing.T, name string) *time.Location {
	t.Helper()
	loc, err := time.LoadLocation(name)
	if err != nil {
		t.Fatal(err)
	}
	return loc
}

func keys(r *Report) string {
	var ks []string
	for _, p := range r.Periods {
		ks = append(ks, fmt.Sprintf("%s:%d", p.Key, p.Input))
	}
	return strings.Join(ks, " ")
}

// TestDaysInQuarterHourZones: a day in a zone 5:30 or 5:45 from UTC is a
// whole number of 15-minute buckets; the bucket that opens the day is in
// it, the one before it is not.
func TestDaysInQuarterHourZones(t *testing.T) {
	entries := []Entry{
		{Start: ms("2026-03-01T18:15:00Z"), Session: "T-a", Model: "m", Usage: Usage{Input: 1}},  // Kathmandu 2026-03-02 00:00
		{Start: ms("2026-03-01T18:00:00Z"), Session: "T-a", Model: "m", Usage: Usage{Input: 2}},  // Kathmandu 03-01 23:45, Kolkata 03-01 23:30
		{Start: ms("2026-03-01T18:30:00Z"), Session: "T-a", Model: "m", Usage: Usage{Input: 4}},  // Kolkata 03-02 00:00
		{Start: ms("2026-03-02T04:45:00Z"), Session: "T-b", Model: "m", Usage: Usage{Input: 8}},  // New York 03-01 23:45 (EST)
		{Start: ms("2026-03-09T04:00:00Z"), Session: "T-b", Model: "m", Usage: Usage{Input: 16}}, // New York 03-09 00:00 (EDT, after the change)
	}
	for _, tc := range []struct{ zone, want string }{
		{"UTC", "2026-03-01:7 2026-03-02:8 2026-03-09:16"},
		{"Asia/Kathmandu", "2026-03-01:2 2026-03-02:13 2026-03-09:16"},
		{"Asia/Kolkata", "2026-03-01:3 2026-03-02:12 2026-03-09:16"},
		{"America/New_York", "2026-03-01:15 2026-03-09:16"},
	} {
		r, err := Build(entries, Options{Kind: Daily, Location: zone(t, tc.zone)})
		if err != nil {
			t.Fatal(err)
		}
		if got := keys(r); got != tc.want {
			t.Errorf("%s: %s, want %s", tc.zone, got, tc.want)
		}
		if r.Totals.Input != 31 {
			t.Errorf("%s: total input %d, want 31", tc.zone, r.Totals.Input)
		}
	}
}

// TestBoundsAndLast: --since/--until keep the days between them,
// inclusive, in the report's zone; --last counts calendar periods back
// from now; a session report keeps only the bounded days' usage of each
// thread.
func TestBoundsAndLast(t *testing.T) {
	entries := []Entry{
		{Start: ms("2026-01-30T10:00:00Z"), Session: "T-b", Model: "m", Usage: Usage{Input: 1}},
		{Start: ms("2026-01-31T10:00:00Z"), Session: "T-b", Model: "m", Usage: Usage{Input: 2}},
		{Start: ms("2026-02-01T10:00:00Z"), Session: "T-a", Model: "m", Usage: Usage{Input: 4}},
		{Start: ms("2026-02-03T10:00:00Z"), Session: "T-b", Model: "m", Usage: Usage{Input: 8}},
	}
	now := time.Date(2026, 2, 3, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		o    Options
		want string
	}{
		{Options{Kind: Daily, Since: "2026-01-31", Until: "2026-02-01"}, "2026-01-31:2 2026-02-01:4"},
		{Options{Kind: Monthly, Since: "2026-01-31"}, "2026-01:2 2026-02:12"},
		{Options{Kind: Session, Since: "2026-01-31", Until: "2026-02-01"}, "T-a:4 T-b:2"},
		{Options{Kind: Session}, "T-a:4 T-b:11"},
		{Options{Kind: Daily, Last: 1, Now: now}, "2026-02-03:8"},
		{Options{Kind: Daily, Last: 3, Now: now}, "2026-02-01:4 2026-02-03:8"},
		{Options{Kind: Monthly, Last: 1, Now: now}, "2026-02:12"},
		{Options{Kind: Monthly, Last: 2, Now: now}, "2026-01:3 2026-02:12"},
		{Options{Kind: Session, Last: 1, Now: now}, "T-b:11"},
	} {
		tc.o.Location = time.UTC
		r, err := Build(entries, tc.o)
		if err != nil {
			t.Fatal(err)
		}
		if got := keys(r); got != tc.want {
			t.Errorf("%+v: %s, want %s", tc.o, got, tc.want)
		}
	}
	if _, err := Build(entries, Options{Kind: Daily, Since: "2026-02-02", Until: "2026-02-01"}); err == nil {
		t.Error("--since after --until: no error")
	}
}

// TestModelsAndUndated: models are listed in the order first used, the
// breakdown by cost; usage without any time is in no period, and said.
func TestModelsAndUndated(t *testing.T) {
	entries := []Entry{
		{Start: Undated, Session: "T-a", Model: "a", Usage: Usage{Output: 5}},
		{Start: ms("2026-02-01T10:00:00Z"), Session: "T-a", Model: "cheap", Usage: Usage{Input: 1, Cost: 10}},
		{Start: ms("2026-02-01T11:00:00Z"), Session: "T-a", Model: "dear", Usage: Usage{Input: 1, Cost: 99}},
	}
	r, err := Build(entries, Options{Kind: Daily, Location: time.UTC})
	if err != nil {
		t.Fatal(err)
	}
	p := r.Periods[0]
	if got := p.ModelsUsed(); !slices.Equal(got, []string{"cheap", "dear"}) {
		t.Errorf("models used %v", got)
	}
	if got := p.Breakdown(); !slices.Equal(got, []string{"dear", "cheap"}) {
		t.Errorf("breakdown %v", got)
	}
	if r.Undated.Output != 5 || r.Totals.Output != 0 {
		t.Errorf("undated %+v, totals %+v", r.Undated, r.Totals)
	}
}

func TestParseDate(t *testing.T) {
	for in, want := range map[string]string{"": "", "2026-02-01": "2026-02-01", "20260201": "2026-02-01"} {
		if got, err := ParseDate(in); err != nil || got != want {
			t.Errorf("ParseDate(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, in := range []string{"2026-2-1", "2026-02-30", "202602011", "yesterday"} {
		if got, err := ParseDate(in); err == nil {
			t.Errorf("ParseDate(%q) = %q, want an error", in, got)
		}
	}
}
