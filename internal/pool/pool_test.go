package pool

import (
	"strings"
	"testing"
)

// TestGetHoldsWhatWasAsked: a buffer from the pools is empty and holds
// what was asked for, at the edges of the size classes and past the
// largest; one given back is reused whole.
func TestGetHoldsWhatWasAsked(t *testing.T) {
	b := New(16, 20)
	for _, n := range []int64{1, 64<<10 - 1, 64 << 10, 64<<10 + 1, 1<<20 + 1, 3 << 20} {
		for range 3 {
			buf := b.Get(n)
			if len(*buf) != 0 || int64(cap(*buf)) < n {
				t.Fatalf("asked %d, got len %d cap %d", n, len(*buf), cap(*buf))
			}
			*buf = append(*buf, strings.Repeat("x", 10)...)
			b.Put(buf)
		}
	}
	b.Put(nil)
}

// TestScribbleOverwritesWhatIsGivenBack: with Scribble on, a buffer given
// back reads as garbage, so a use after its release shows.
func TestScribbleOverwritesWhatIsGivenBack(t *testing.T) {
	b := New(16, 20)
	defer b.Scribble()()
	buf := b.Get(100)
	*buf = append(*buf, "counted"...)
	kept := *buf
	b.Put(buf)
	if string(kept) != "XXXXXXX" {
		t.Fatalf("released bytes read %q", kept)
	}
}
