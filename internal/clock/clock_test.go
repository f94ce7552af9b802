package clock

import (
	"testing"
	"time"
)

var start = time.Date(2026, 12, 1, 8, 0, 0, 0, time.UTC)

// fired reports whether c has a value, without waiting.
func fired(c <-chan time.Time) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}

func TestAdvanceFiresWhatComesDue(t *testing.T) {
	f := NewFake(start)
	soon, late := f.NewTimer(2*time.Second), f.NewTimer(5*time.Second)
	tick := f.NewTicker(time.Second)
	f.Advance(3 * time.Second)
	if !fired(soon.C()) || fired(late.C()) || !fired(tick.C()) {
		t.Fatal("after 3s: want the 2s timer and the ticker fired, the 5s timer not")
	}
	if got := f.Now(); !got.Equal(start.Add(3 * time.Second)) {
		t.Fatalf("now %s", got)
	}
}

func TestAdvanceToNext(t *testing.T) {
	for _, tc := range []struct {
		name   string
		set    func(f *Fake) []Timer // timers whose firing the case checks, in order
		want   time.Duration         // where the clock stands after one AdvanceToNext
		ok     bool
		firing []bool
	}{
		{name: "nothing runs: the clock stays", set: func(*Fake) []Timer { return nil }, want: 0, ok: false},
		{name: "the earliest of two timers", set: func(f *Fake) []Timer {
			return []Timer{f.NewTimer(7 * time.Second), f.NewTimer(3 * time.Second)}
		}, want: 3 * time.Second, ok: true, firing: []bool{false, true}},
		{name: "a stopped timer is passed over", set: func(f *Fake) []Timer {
			early, later := f.NewTimer(time.Second), f.NewTimer(4*time.Second)
			early.Stop()
			return []Timer{early, later}
		}, want: 4 * time.Second, ok: true, firing: []bool{false, true}},
		{name: "only stopped timers: the clock stays", set: func(f *Fake) []Timer {
			t := f.NewTimer(time.Second)
			t.Stop()
			return []Timer{t}
		}, want: 0, ok: false, firing: []bool{false}},
		{name: "two due at one instant fire together", set: func(f *Fake) []Timer {
			return []Timer{f.NewTimer(2 * time.Second), f.NewTimer(2 * time.Second)}
		}, want: 2 * time.Second, ok: true, firing: []bool{true, true}},
		{name: "a zero timer fires where the clock is", set: func(f *Fake) []Timer {
			return []Timer{f.NewTimer(0), f.NewTimer(time.Second)}
		}, want: 0, ok: true, firing: []bool{true, false}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := NewFake(start)
			timers := tc.set(f)
			if ok := f.AdvanceToNext(); ok != tc.ok {
				t.Fatalf("AdvanceToNext = %v, want %v", ok, tc.ok)
			}
			if got := f.Now().Sub(start); got != tc.want {
				t.Fatalf("clock moved %s, want %s", got, tc.want)
			}
			for i, tm := range timers {
				if got := fired(tm.C()); got != tc.firing[i] {
					t.Errorf("timer %d fired %v, want %v", i, got, tc.firing[i])
				}
			}
		})
	}
}

// A ticker comes due again and again: each call moves one period.
func TestAdvanceToNextFollowsATicker(t *testing.T) {
	f := NewFake(start)
	tick := f.NewTicker(30 * time.Second)
	for i := 1; i <= 3; i++ {
		if !f.AdvanceToNext() || !fired(tick.C()) {
			t.Fatalf("tick %d did not fire", i)
		}
		if got := f.Now().Sub(start); got != time.Duration(i)*30*time.Second {
			t.Fatalf("tick %d at %s", i, got)
		}
	}
	tick.Stop()
	if f.AdvanceToNext() {
		t.Fatal("a stopped ticker still moved the clock")
	}
}
