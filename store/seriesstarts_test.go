package store

import (
	"testing"
	"time"
)

// Retain forgets the starts it is told to, and only those; a forgotten
// series starts anew when next seen. The generation moves only when
// something was dropped, so that the state is saved again.
func TestSeriesStartsRetain(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	s := NewSeriesStarts()
	for k := uint64(1); k <= 3; k++ {
		s.Start(k, t0)
	}
	g := s.Generation()
	if n := s.Retain(func(uint64) bool { return true }); n != 0 || s.Generation() != g {
		t.Fatalf("keeping all dropped %d, generation %d -> %d", n, g, s.Generation())
	}
	if n := s.Retain(func(k uint64) bool { return k != 2 }); n != 1 || s.Generation() == g {
		t.Fatalf("dropped %d, want 1; generation %d -> %d", n, g, s.Generation())
	}
	t1 := t0.Add(time.Hour)
	for _, tc := range []struct {
		key  uint64
		want time.Time
	}{{1, t0}, {2, t1}, {3, t0}} {
		if got := s.Start(tc.key, t1); !got.Equal(tc.want) {
			t.Errorf("series %d starts %s, want %s", tc.key, got, tc.want)
		}
	}
}

// Restart gives a new start unless one was already given after the
// caller last saw the series.
func TestSeriesStartsRestart(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name       string
		start      time.Time // the series' start before, zero for none
		since, now time.Time
		want       time.Time
	}{
		{"started before the caller saw it", t0, t0.Add(time.Minute), t0.Add(2 * time.Minute), t0.Add(2 * time.Minute)},
		{"started when the caller saw it", t0.Add(time.Minute), t0.Add(time.Minute), t0.Add(2 * time.Minute), t0.Add(2 * time.Minute)},
		{"restarted since by another caller", t0.Add(90 * time.Second), t0.Add(time.Minute), t0.Add(2 * time.Minute), t0.Add(90 * time.Second)},
		{"unknown", time.Time{}, t0, t0.Add(time.Minute), t0.Add(time.Minute)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := NewSeriesStarts()
			if !tc.start.IsZero() {
				s.Start(7, tc.start)
			}
			if got := s.Restart(7, tc.now, tc.since); !got.Equal(tc.want) {
				t.Errorf("Restart: %s, want %s", got, tc.want)
			}
			if got := s.Start(7, tc.now.Add(time.Hour)); !got.Equal(tc.want) {
				t.Errorf("then Start: %s, want %s", got, tc.want)
			}
		})
	}
}
