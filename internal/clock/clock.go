// Package clock lets long-running loops take time from an injected source,
// so tests drive timers and tickers instead of sleeping.
package clock

import (
	"sort"
	"sync"
	"time"
)

// Clock makes timers and tells the time.
type Clock interface {
	Now() time.Time
	NewTimer(d time.Duration) Timer
	NewTicker(d time.Duration) Ticker
}

// Timer fires once on C after its duration.
type Timer interface {
	C() <-chan time.Time
	Stop() bool
	Reset(d time.Duration)
}

// Ticker fires on C every period.
type Ticker interface {
	C() <-chan time.Time
	Stop()
}

// Real is the wall clock.
type Real struct{}

// Now implements Clock.
func (Real) Now() time.Time { return time.Now() }

// NewTimer implements Clock.
func (Real) NewTimer(d time.Duration) Timer { return realTimer{time.NewTimer(d)} }

// NewTicker implements Clock.
func (Real) NewTicker(d time.Duration) Ticker { return realTicker{time.NewTicker(d)} }

type realTimer struct{ t *time.Timer }

func (r realTimer) C() <-chan time.Time   { return r.t.C }
func (r realTimer) Stop() bool            { return r.t.Stop() }
func (r realTimer) Reset(d time.Duration) { r.t.Reset(d) }

type realTicker struct{ t *time.Ticker }

func (r realTicker) C() <-chan time.Time { return r.t.C }
func (r realTicker) Stop()               { r.t.Stop() }

// Fake is a clock that moves only when Advance is called.
type Fake struct {
	mu      sync.Mutex
	now     time.Time
	waiters []*fakeWaiter
}

// NewFake returns a fake clock set to start.
func NewFake(start time.Time) *Fake { return &Fake{now: start} }

type fakeWaiter struct {
	c       chan time.Time
	at      time.Time
	period  time.Duration // 0 for a timer
	stopped bool
}

// Now implements Clock.
func (f *Fake) Now() time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.now
}

// NewTimer implements Clock.
func (f *Fake) NewTimer(d time.Duration) Timer {
	f.mu.Lock()
	defer f.mu.Unlock()
	w := &fakeWaiter{c: make(chan time.Time, 1), at: f.now.Add(d)}
	f.waiters = append(f.waiters, w)
	return &fakeTimer{f: f, w: w}
}

// NewTicker implements Clock.
func (f *Fake) NewTicker(d time.Duration) Ticker {
	f.mu.Lock()
	defer f.mu.Unlock()
	w := &fakeWaiter{c: make(chan time.Time, 1), at: f.now.Add(d), period: d}
	f.waiters = append(f.waiters, w)
	return &fakeTicker{f: f, w: w}
}

// Advance moves the clock forward, firing every timer and ticker that comes
// due, in order. Like the runtime's, a ticker whose reader is slow drops
// ticks rather than queueing them.
func (f *Fake) Advance(d time.Duration) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.advanceTo(f.now.Add(d))
}

// AdvanceToNext moves the clock to the moment the earliest running timer or
// ticker comes due, and fires it; false, and the clock unmoved, when none
// runs. A test that calls it while the code under test works leaves that
// work at one fixed instant however slowly the machine runs it, and moves
// time only through the waits the code itself asked for.
func (f *Fake) AdvanceToNext() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	var next *fakeWaiter
	for _, w := range f.waiters {
		if !w.stopped && (next == nil || w.at.Before(next.at)) {
			next = w
		}
	}
	if next == nil {
		return false
	}
	end := next.at
	if end.Before(f.now) {
		end = f.now // a timer set for a past instant fires now
	}
	f.advanceTo(end)
	return true
}

// advanceTo fires, in order, everything due by end and sets the clock to
// end; f.mu is held.
func (f *Fake) advanceTo(end time.Time) {
	for {
		sort.SliceStable(f.waiters, func(i, j int) bool { return f.waiters[i].at.Before(f.waiters[j].at) })
		var next *fakeWaiter
		for _, w := range f.waiters {
			if !w.stopped && !w.at.After(end) {
				next = w
				break
			}
		}
		if next == nil {
			break
		}
		f.now = next.at
		select {
		case next.c <- f.now:
		default:
		}
		if next.period > 0 {
			next.at = next.at.Add(next.period)
		} else {
			next.stopped = true
		}
	}
	f.now = end
	live := f.waiters[:0]
	for _, w := range f.waiters {
		if !w.stopped {
			live = append(live, w)
		}
	}
	f.waiters = live
}

type fakeTimer struct {
	f *Fake
	w *fakeWaiter
}

func (t *fakeTimer) C() <-chan time.Time { return t.w.c }

func (t *fakeTimer) Stop() bool {
	t.f.mu.Lock()
	defer t.f.mu.Unlock()
	was := !t.w.stopped
	t.w.stopped = true
	return was
}

func (t *fakeTimer) Reset(d time.Duration) {
	t.f.mu.Lock()
	defer t.f.mu.Unlock()
	present := false
	for _, w := range t.f.waiters {
		present = present || w == t.w
	}
	if !present {
		t.f.waiters = append(t.f.waiters, t.w)
	}
	t.w.stopped = false
	t.w.at = t.f.now.Add(d)
}

type fakeTicker struct {
	f *Fake
	w *fakeWaiter
}

func (t *fakeTicker) C() <-chan time.Time { return t.w.c }

func (t *fakeTicker) Stop() {
	t.f.mu.Lock()
	defer t.f.mu.Unlock()
	t.w.stopped = true
}
