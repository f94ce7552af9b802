package state

import (
	"testing"
	"time"

	"github.com/amp-exporter/amp-exporter/store"
)

// The OTLP push's start times are saved with the counters and restored
// with them: a series known before a restart keeps its start, one first
// seen after gets its own, and both are kept by the next restart.
func TestSeriesStartsSurviveARestart(t *testing.T) {
	dir := t.TempDir()
	t0 := time.Date(2026, 12, 1, 8, 0, 0, 0, time.UTC)

	s := newTestState(dir)
	s.stores.SeriesStarts = store.NewSeriesStarts()
	s.keeper.stores = s.stores
	if err := s.keeper.restore(); err != nil {
		t.Fatal(err)
	}
	s.stores.SeriesStarts.Start(1, t0)
	s.stores.SeriesStarts.Start(2, t0.Add(time.Minute))
	if err := s.keeper.Save(); err != nil {
		t.Fatal(err)
	}
	if err := s.keeper.Close(); err != nil {
		t.Fatal(err)
	}

	restarted := func() *testState {
		t.Helper()
		s := newTestState(dir)
		s.stores.SeriesStarts = store.NewSeriesStarts()
		s.keeper.stores = s.stores
		if err := s.keeper.restore(); err != nil {
			t.Fatal(err)
		}
		return s
	}
	s = restarted()
	t1 := t0.Add(time.Hour)
	if got := s.stores.SeriesStarts.Start(1, t1); !got.Equal(t0) {
		t.Errorf("restored series 1 starts %s, want %s", got, t0)
	}
	if got := s.stores.SeriesStarts.Start(2, t1); !got.Equal(t0.Add(time.Minute)) {
		t.Errorf("restored series 2 starts %s, want %s", got, t0.Add(time.Minute))
	}
	if got := s.stores.SeriesStarts.Start(3, t1); !got.Equal(t1) {
		t.Errorf("new series 3 starts %s, want %s", got, t1)
	}
	if err := s.keeper.Save(); err != nil {
		t.Fatal(err)
	}
	if err := s.keeper.Close(); err != nil {
		t.Fatal(err)
	}

	s = restarted()
	defer s.keeper.Close()
	if n := s.stores.SeriesStarts.Len(); n != 3 {
		t.Fatalf("%d series restored after the second restart, want 3", n)
	}
	if got := s.stores.SeriesStarts.Start(3, t1.Add(time.Hour)); !got.Equal(t1) {
		t.Errorf("series 3 starts %s after the second restart, want %s", got, t1)
	}
}

// A state log written before start times were kept (or by an exporter
// without the push) restores as before, with no start times.
func TestStateWithoutSeriesStartsRestores(t *testing.T) {
	dir := t.TempDir()
	old := newTestState(dir) // no SeriesStarts: what an older version wrote
	if err := old.keeper.restore(); err != nil {
		t.Fatal(err)
	}
	if err := old.keeper.Save(); err != nil {
		t.Fatal(err)
	}
	if err := old.keeper.Close(); err != nil {
		t.Fatal(err)
	}
	s := newTestState(dir)
	s.stores.SeriesStarts = store.NewSeriesStarts()
	s.keeper.stores = s.stores
	if err := s.keeper.restore(); err != nil {
		t.Fatalf("an older state log does not restore: %v", err)
	}
	defer s.keeper.Close()
	if n := s.stores.SeriesStarts.Len(); n != 0 {
		t.Fatalf("%d start times from a log without them", n)
	}
	if s.loadErrors(t) != 0 {
		t.Fatal("load errors")
	}
}
