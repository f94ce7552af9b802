package store

import (
	"errors"
	"testing"
)

// TestWindowRefusesAnItemPinnedBeforeIt: a window of a server thread
// whose messages hold one the thread counted before the window (an
// earlier message's id, come back after the window's start) is refused as
// stale, so that the thread is read whole: counted by the window, that
// message would count in the window's prefix and again in the window.
func TestWindowRefusesAnItemPinnedBeforeIt(t *testing.T) {
	s := NewThreadStore(StoreOptions{})
	path := AmpServerPath("T-win")
	msgs := []string{
		userMsg(0, "one"), assistantMsg(1, stEndTurn, usageOf("m1", 10, 100)),
		userMsg(2, "two"), assistantMsg(3, stEndTurn, usageOf("m1", 20, 200)),
		userMsg(4, "three"), assistantMsg(5, stEndTurn, usageOf("m1", 30, 300)),
	}
	// A window holds the messages from index 4 on, the others as nulls.
	window := func(msgs ...string) string {
		return threadDoc("T-win", "", append([]string{"null", "null", "null", "null"}, msgs...)...)
	}
	w := Window{Start: 4, Anchor: 44, Count: 6}
	if _, err := s.ApplyWindow(path, FileVersion{AmpServerV: 1}, summaryOf(t, threadDoc("T-win", "", msgs...)), Window{},
		&NextWindow{Window: w, Sum: summaryOf(t, window(msgs[4:]...))}); err != nil {
		t.Fatal(err)
	}
	if got, ok := s.Window(path); !ok || got != w {
		t.Fatalf("window %+v %v, want %+v: the test does not reach a window", got, ok, w)
	}
	before := series(s, FamTokens, "m1", "output")
	// The thread's second message, pinned before the window, comes back in it.
	back := window(msgs[4], msgs[5], assistantMsg(1, stEndTurn, usageOf("m1", 10, 100)))
	if _, err := s.ApplyWindow(path, FileVersion{AmpServerV: 2}, summaryOf(t, back), w, nil); !errors.Is(err, ErrWindowStale) {
		t.Fatalf("a window holding an item pinned before it: %v, want ErrWindowStale", err)
	}
	if got := series(s, FamTokens, "m1", "output"); got != before {
		t.Errorf("output tokens %d after the refused window, want %d", got, before)
	}
	// A window that only grows is taken.
	grown := window(msgs[4], msgs[5], userMsg(6, "four"), assistantMsg(7, stEndTurn, usageOf("m1", 40, 400)))
	if _, err := s.ApplyWindow(path, FileVersion{AmpServerV: 3}, summaryOf(t, grown), w, nil); err != nil {
		t.Fatalf("a window that grew: %v", err)
	}
	if got := series(s, FamTokens, "m1", "output"); got != before+400 {
		t.Errorf("output tokens %d after the window grew, want %d", got, before+400)
	}
}
