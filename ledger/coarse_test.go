package ledger

import (
	"slices"
	"testing"
	"time"
)

func at(t *testing.T, s string) int64 {
	t.Helper()
	v, err := time.Parse(time.RFC3339, s)
	if err != nil {
		t.Fatal(err)
	}
	return v.UnixMilli()
}

// TestInexactDays: a span within one day of a zone leaves that day exact;
// one that crosses a midnight of the zone makes every day it touches
// inexact, in that zone only.
func TestInexactDays(t *testing.T) {
	kathmandu, err := time.LoadLocation("Asia/Kathmandu") // +05:45
	if err != nil {
		t.Fatal(err)
	}
	marquesas, err := time.LoadLocation("Pacific/Marquesas") // -09:30
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name  string
		spans []Span
		loc   *time.Location
		want  []string
	}{
		{"a UTC day in UTC", []Span{{at(t, "2026-03-01T00:00:00Z"), at(t, "2026-03-02T00:00:00Z")}}, time.UTC, nil},
		{"a UTC day in Kathmandu", []Span{{at(t, "2026-03-01T00:00:00Z"), at(t, "2026-03-02T00:00:00Z")}}, kathmandu,
			[]string{"2026-03-01", "2026-03-02"}},
		{"a UTC hour in Kathmandu", []Span{{at(t, "2026-03-01T18:00:00Z"), at(t, "2026-03-01T19:00:00Z")}}, kathmandu,
			[]string{"2026-03-01", "2026-03-02"}},
		{"a UTC hour clear of Kathmandu's midnight", []Span{{at(t, "2026-03-01T17:00:00Z"), at(t, "2026-03-01T18:00:00Z")}}, kathmandu, nil},
		{"ends at the midnight", []Span{{at(t, "2026-03-01T17:15:00Z"), at(t, "2026-03-01T18:15:00Z")}}, kathmandu, nil},
		{"a UTC hour in Marquesas", []Span{{at(t, "2026-03-01T09:00:00Z"), at(t, "2026-03-01T10:00:00Z")}}, marquesas,
			[]string{"2026-02-28", "2026-03-01"}},
		{"days together, merged and sorted", []Span{
			{at(t, "2026-03-05T00:00:00Z"), at(t, "2026-03-07T00:00:00Z")},
			{at(t, "2026-03-01T00:00:00Z"), at(t, "2026-03-03T00:00:00Z")},
			{at(t, "2026-03-02T00:00:00Z"), at(t, "2026-03-03T00:00:00Z")},
		}, time.UTC, []string{"2026-03-01", "2026-03-02", "2026-03-05", "2026-03-06"}},
		{"empty span", []Span{{at(t, "2026-03-01T00:00:00Z"), at(t, "2026-03-01T00:00:00Z")}}, time.UTC, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := InexactDays(tc.spans, tc.loc); !slices.Equal(got, tc.want) {
				t.Errorf("%v, want %v", got, tc.want)
			}
		})
	}
}
