package jsonscan

import (
	"bytes"
	"math/rand/v2"
	"testing"

	"github.com/amp-exporter/amp-exporter/internal/testsupport/testsize"
)

func TestByteMask(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	for range 100000 {
		var buf [8]byte
		for i := range buf {
			buf[i] = byte(r.IntN(256))
			if r.IntN(3) == 0 {
				buf[i] = '"'
			}
		}
		x := uint64(0)
		for i := 7; i >= 0; i-- {
			x = x<<8 | uint64(buf[i])
		}
		var want uint64
		for i, c := range buf {
			if c == '"' {
				want |= 1 << i
			}
		}
		if got := byteMask(x, '"'); got != want {
			t.Fatalf("byteMask(% x) = %08b, want %08b", buf, got, want)
		}
	}
}

// swarCheck holds skipBlocksSWAR to skipBlocksRef on one input.
func swarCheck(t testing.TB, b []byte, st blockState) int {
	t.Helper()
	got, want := st, st
	n := skipBlocksSWAR(b, &got)
	nRef := skipBlocksRef(b, &want)
	if n != nRef || got != want {
		t.Fatalf("skipBlocksSWAR(%s, %+v) = %d, %+v; skipBlocksRef = %d, %+v", blkQuote(b), st, n, got, nRef, want)
	}
	return n
}

func TestSkipBlocksSWARDifferential(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	iters := 20000
	if testsize.Long() {
		iters = 200000
	}
	skipped := 0
	for i := range iters {
		var b []byte
		st := blkRandomState(r)
		if i%2 == 0 {
			b = blkRandom(r, r.IntN(1024))
		} else {
			var doc []byte
			for len(doc) < 64 {
				doc = blkJSON(r, doc, 0)
			}
			cut := r.IntN(len(doc))
			st = blockState{depth: 1}
			for _, c := range doc[:cut] {
				blkStep(&st, c)
			}
			b = doc[cut:]
		}
		skipped += swarCheck(t, b, st)
	}
	if skipped < iters*64/4 {
		t.Errorf("only %d bytes skipped over %d inputs", skipped, iters)
	}
	// A real thread's messages, skipped as the scanner would.
	msgs := blkThreadMessages(t)
	want := blkSkipValue(msgs, blockState{depth: 1}, skipBlocksRef)
	if got := blkSkipValue(msgs, blockState{depth: 1}, skipBlocksSWAR); got != want {
		t.Fatalf("thread messages: SWAR skip ends at %d, reference at %d", got, want)
	}
}

func FuzzSWARBlocks(f *testing.F) {
	f.Add([]byte(`"abc\"def\\"`), uint16(0), true, false)
	f.Add([]byte(`{"a": [1, 2, {"b": "]]\\\"}"}], "c": "\\\\"}`), uint16(1), false, false)
	f.Add(bytes.Repeat([]byte(`\`), 130), uint16(3), true, true)
	f.Add(bytes.Repeat([]byte(`]`), 70), uint16(70), false, false)
	f.Fuzz(func(t *testing.T, data []byte, depth uint16, inString, escaped bool) {
		st := blockState{depth: int(depth), inString: inString, escaped: escaped}
		if st.depth > maxBlockDepth+64 {
			st.depth %= maxBlockDepth + 1
		}
		swarCheck(t, data, st)
		if len(data) > 0 && len(data) < 256 {
			tiled := bytes.Repeat(data, 256/len(data)+1)
			swarCheck(t, tiled, st)
			swarCheck(t, tiled[1:], st)
		}
	})
}

func BenchmarkSkipBlocksSWAR(b *testing.B) {
	msgs := blkThreadMessages(b)
	want := blkSkipValue(msgs, blockState{depth: 1}, skipBlocksRef)
	for _, k := range []struct {
		name string
		f    func([]byte, *blockState) int
	}{{"swar", skipBlocksSWAR}, {"ref", skipBlocksRef}} {
		b.Run(k.name, func(b *testing.B) {
			b.SetBytes(int64(want))
			for b.Loop() {
				if blkSkipValue(msgs, blockState{depth: 1}, k.f) != want {
					b.Fatal("wrong end")
				}
			}
		})
	}
}
