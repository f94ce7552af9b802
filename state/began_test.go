package state

import (
	"testing"
	"time"
)

// TestCountersBegan: a new state records when its counters began, a
// restart keeps that time, and the backfill reads it (while the state is
// open) as its default --until; no state means no time.
func TestCountersBegan(t *testing.T) {
	dir := t.TempDir()
	if began, err := CountersBegan(dir); err != nil || !began.IsZero() {
		t.Fatalf("no state: %v, %v; want zero, nil", began, err)
	}
	at := time.Date(2026, 11, 30, 8, 0, 0, 0, time.UTC)
	a := newTestState(dir)
	a.keeper.now = func() time.Time { return at }
	mustRestore(t, a)
	began, err := CountersBegan(dir)
	if err != nil || !began.Equal(at) {
		t.Fatalf("began %v, %v; want %v", began, err, at)
	}
	a.keeper.close()
	b := newTestState(dir)
	b.keeper.now = func() time.Time { return at.Add(time.Hour) }
	mustRestore(t, b)
	if began, err := CountersBegan(dir); err != nil || !began.Equal(at) {
		t.Errorf("after a restart: began %v, %v; want %v still", began, err, at)
	}
}
