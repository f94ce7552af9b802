package jsonscan

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/amp-exporter/amp-exporter/internal/testsupport/testsize"
	"github.com/amp-exporter/amp-exporter/internal/testsupport/threadgen"
)

// blkStep applies the byte-wise rules of blockState to one byte. It is the
// specification both skipBlocks and skipBlocksRef are checked against.
func blkStep(st *blockState, c byte) {
	if st.inString {
		switch {
		case st.escaped:
			st.escaped = false
		case c == '\\':
			st.escaped = true
		case c == '"':
			st.inString = false
		}
		return
	}
	switch c {
	case '"':
		st.inString = true
	case '{', '[':
		st.depth++
	case '}', ']':
		st.depth--
	}
}

// blkCheck runs skipBlocks and skipBlocksRef on b from st and fails unless
// they agree, the state they report is what the byte-wise rules give at
// b[n], and the skipped bytes neither end the value nor pass the nesting
// limit. It returns the number of bytes skipped.
func blkCheck(t testing.TB, b []byte, st blockState) int {
	t.Helper()
	var orig []byte
	if len(b) <= 4096 {
		orig = bytes.Clone(b)
	}
	got, want := st, st
	n := skipBlocks(b, &got)
	nRef := skipBlocksRef(b, &want)
	if orig != nil && !bytes.Equal(b, orig) {
		t.Fatalf("input modified")
	}
	if n != nRef || got != want {
		t.Fatalf("skipBlocks(%s, %+v) = %d, %+v; skipBlocksRef = %d, %+v", blkQuote(b), st, n, got, nRef, want)
	}
	if n < 0 || n > len(b) || n%64 != 0 {
		t.Fatalf("skipBlocks(%s, %+v) = %d: not a whole number of blocks of the input", blkQuote(b), st, n)
	}
	if !blockStateOK(&st) {
		if n != 0 || got != st {
			t.Fatalf("skipBlocks(%s, %+v) = %d, %+v from an invalid state", blkQuote(b), st, n, got)
		}
		return 0
	}
	s := st
	for i, c := range b[:n] {
		blkStep(&s, c)
		if st.depth == 0 && !s.inString || st.depth > 0 && s.depth <= 0 {
			t.Fatalf("skipBlocks(%s, %+v) = %d skipped the end of the value at byte %d", blkQuote(b), st, n, i)
		}
		if s.depth > maxBlockDepth {
			t.Fatalf("skipBlocks(%s, %+v) = %d skipped past the depth limit at byte %d", blkQuote(b), st, n, i)
		}
	}
	if s != got {
		t.Fatalf("skipBlocks(%s, %+v) = %d, %+v; byte by byte the state is %+v", blkQuote(b), st, n, got, s)
	}
	return n
}

// blkQuote formats an input for a failure message, cut short if long.
func blkQuote(b []byte) string {
	if len(b) > 512 {
		return fmt.Sprintf("%q... (%d bytes)", b[:512], len(b))
	}
	return fmt.Sprintf("%q", b)
}

// blk builds an input from pieces, so that tables can say where bytes fall
// relative to block boundaries.
func blk(parts ...string) []byte { return []byte(strings.Join(parts, "")) }

func TestSkipBlocksTable(t *testing.T) {
	a := func(n int) string { return strings.Repeat("a", n) }
	lone := blockState{inString: true}
	tests := []struct {
		name  string
		in    []byte
		st    blockState
		wantN int
		want  blockState
	}{
		{"empty", nil, lone, 0, lone},
		{"short", blk(a(63)), lone, 0, lone},
		{"string body", blk(a(64), a(64), a(10)), lone, 128, lone},
		{"quote in second block", blk(a(64), a(20), `"`, a(43)), lone, 64, lone},
		{"quote at bit 0", blk(`"`, a(63)), lone, 0, lone},
		{"quote at bit 63", blk(a(63), `"`), lone, 0, lone},
		{"escaped quote at bit 63", blk(a(62), `\"`, a(64)), lone, 128, lone},
		{"backslash at bit 63 escapes bit 0", blk(a(63), `\`, `"`, a(63)), lone, 128, lone},
		{"escape carried out", blk(a(63), `\`, `"`), lone, 64, blockState{inString: true, escaped: true}},
		{"escape carried in", blk(`"`, a(63)), blockState{inString: true, escaped: true}, 64, lone},
		{"escaped backslash carried in", blk(`\"`, a(62)), blockState{inString: true, escaped: true}, 0, blockState{inString: true, escaped: true}},
		{"run of 3 across blocks", blk(a(62), `\\`, `\"`, a(62)), lone, 128, lone},
		{"run of 2 across blocks", blk(a(63), `\`, `\"`, a(62)), lone, 64, blockState{inString: true, escaped: true}},
		{"run of 4 across blocks", blk(a(62), `\\`, `\\"`, a(61)), lone, 64, blockState{inString: true}},
		{"run of 64", blk(strings.Repeat(`\`, 64), `"`, a(63)), lone, 64, lone},
		{"run of 65", blk(strings.Repeat(`\`, 64), `\"`, a(62)), lone, 128, lone},
		{"run of 65 carried", blk(strings.Repeat(`\`, 64), `\`, a(63)), lone, 128, blockState{inString: true}},
		{"run of 127 escapes a quote at bit 63", blk(strings.Repeat(`\`, 127), `"`, a(64)), lone, 192, lone},
		{"run of 128", blk(strings.Repeat(`\`, 128), `"`, a(63)), lone, 128, lone},
		{"odd runs on odd bits", blk("a", `\"`, "a", `\\\"`, a(56)), lone, 64, lone},
		{"even runs", blk("a", `\\"`, a(60)), lone, 0, lone},
		{"brackets in a lone string", blk("{[]}]]]]", a(56)), lone, 64, lone},

		{"nested string", blk(`"a]]]b\"]"`, a(54)), blockState{depth: 1}, 64, blockState{depth: 1}},
		{"string open at block end", blk(a(60), `"]]]`, `]]]"`, a(60)), blockState{depth: 1}, 128, blockState{depth: 1}},
		{"inString carried in", blk(`]]"`, a(61)), blockState{depth: 1, inString: true}, 64, blockState{depth: 1}},
		{"depth to exactly 0", blk("]]", a(62)), blockState{depth: 2}, 0, blockState{depth: 2}},
		{"depth to 1", blk("]]", a(62)), blockState{depth: 3}, 64, blockState{depth: 1}},
		{"closers before openers still stop", blk("]]{{", a(60)), blockState{depth: 2}, 0, blockState{depth: 2}},
		{"balanced", blk("{[{}]}", a(58), "[]", a(62)), blockState{depth: 4}, 128, blockState{depth: 4}},
		{"balanced but too many closers", blk("{[{}]}", a(58)), blockState{depth: 3}, 0, blockState{depth: 3}},
		{"closer at bit 63", blk(a(63), "}"), blockState{depth: 1}, 0, blockState{depth: 1}},
		{"opener at bit 63", blk(a(63), "["), blockState{depth: 1}, 64, blockState{depth: 2}},
		{"depth limit reached", blk("{", a(63)), blockState{depth: maxBlockDepth - 1}, 64, blockState{depth: maxBlockDepth}},
		{"depth limit passed", blk("{{", a(62)), blockState{depth: maxBlockDepth - 1}, 0, blockState{depth: maxBlockDepth - 1}},
		{"depth limit passed even if closed", blk("{{}}", a(60)), blockState{depth: maxBlockDepth - 1}, 0, blockState{depth: maxBlockDepth - 1}},
		{"depth limit at the limit", blk(a(64)), blockState{depth: maxBlockDepth}, 64, blockState{depth: maxBlockDepth}},
		{"64 openers", blk(strings.Repeat("[", 64)), blockState{depth: 1}, 64, blockState{depth: 65}},
		{"64 closers", blk(strings.Repeat("}", 64)), blockState{depth: 65}, 64, blockState{depth: 1}},
		{"64 closers at depth 64", blk(strings.Repeat("}", 64)), blockState{depth: 64}, 0, blockState{depth: 64}},
		{"64 quotes", blk(strings.Repeat(`"`, 64)), blockState{depth: 1}, 64, blockState{depth: 1}},
		{"64 quotes in string", blk(strings.Repeat(`"`, 64), "]"), blockState{depth: 1, inString: true}, 64, blockState{depth: 1, inString: true}},

		{"backslash outside strings", blk(`\"`, a(62)), blockState{depth: 1}, 0, blockState{depth: 1}},
		{"lone backslash outside strings", blk(a(10), `\`, a(53)), blockState{depth: 1}, 0, blockState{depth: 1}},
		{"backslash outside strings in block 2", blk(a(64), `"a"\`, a(60)), blockState{depth: 1}, 64, blockState{depth: 1}},
		{"backslash only inside strings", blk(`"\\"`, a(60)), blockState{depth: 1}, 64, blockState{depth: 1}},

		{"non-ASCII", blk(strings.Repeat("\xdb\xdd\xfb\xfd\xa2\xdc\x7c\xff", 8)), blockState{depth: 1}, 64, blockState{depth: 1}},
		{"non-ASCII in a string", blk(strings.Repeat("\xff\xa2\xdc", 21), "\xff"), lone, 64, lone},

		{"invalid: depth 0 outside strings", blk(a(64)), blockState{}, 0, blockState{}},
		{"invalid: escaped outside strings", blk(a(64)), blockState{depth: 1, escaped: true}, 0, blockState{depth: 1, escaped: true}},
		{"invalid: negative depth", blk(a(64)), blockState{depth: -1, inString: true}, 0, blockState{depth: -1, inString: true}},
		{"invalid: too deep", blk(a(64)), blockState{depth: maxBlockDepth + 1}, 0, blockState{depth: maxBlockDepth + 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, name := range []string{"skipBlocks", "skipBlocksRef"} {
				f := skipBlocks
				if name == "skipBlocksRef" {
					f = skipBlocksRef
				}
				st := tt.st
				if n := f(tt.in, &st); n != tt.wantN || st != tt.want {
					t.Errorf("%s = %d, %+v; want %d, %+v", name, n, st, tt.wantN, tt.want)
				}
			}
			blkCheck(t, tt.in, tt.st)
		})
	}
}

// blkAlphabet is biased towards the bytes that matter, with a filler, a
// space and a non-ASCII byte.
const blkAlphabet = "\"\\{}[]a \xff"

// blkRandom returns n random bytes. Each call draws its own byte weights, so
// that some inputs are mostly string bodies, some mostly brackets, some have
// long backslash runs, and some have no backslash at all.
func blkRandom(r *rand.Rand, n int) []byte {
	var w [len(blkAlphabet)]int
	total := 0
	for i := range w {
		if r.IntN(3) > 0 {
			w[i] = r.IntN(16)
		}
		total += w[i]
	}
	if total == 0 {
		w[6], total = 1, 1
	}
	b := make([]byte, n)
	for i := range b {
		x := r.IntN(total)
		j := 0
		for x >= w[j] {
			x -= w[j]
			j++
		}
		b[i] = blkAlphabet[j]
	}
	return b
}

// blkJSON appends a random JSON-like value: nested containers and strings
// with escaped quotes, escaped backslashes and brackets inside, like real
// data, so that blocks are actually skipped and escape runs cross block
// boundaries at every phase.
func blkJSON(r *rand.Rand, b []byte, depth int) []byte {
	switch k := r.IntN(10); {
	case k < 2 && depth < 12:
		open, close := byte('['), byte(']')
		if r.IntN(2) == 0 {
			open, close = '{', '}'
		}
		b = append(b, open)
		for i := range r.IntN(6) {
			if i > 0 {
				b = append(b, ',', ' ')
			}
			b = blkJSON(r, b, depth+1)
		}
		return append(b, close)
	case k < 8:
		b = append(b, '"')
		for range r.IntN(120) {
			switch r.IntN(12) {
			case 0:
				b = append(b, `\"`...)
			case 1:
				b = append(b, strings.Repeat(`\\`, 1+r.IntN(40))...)
			case 2:
				b = append(b, `\n`...)
			case 3:
				b = append(b, "{[]}"[r.IntN(4)])
			case 4:
				b = append(b, 0xe2, 0x80, 0x9c)
			default:
				b = append(b, "abc  xyz"[r.IntN(8)])
			}
		}
		return append(b, '"')
	default:
		return append(b, "12345"[:1+r.IntN(5)]...)
	}
}

// blkRandomState returns a state satisfying skipBlocks' precondition, or
// occasionally one that does not.
func blkRandomState(r *rand.Rand) blockState {
	var st blockState
	switch r.IntN(8) {
	case 0:
		st.depth = maxBlockDepth - r.IntN(100)
	case 1:
		st.depth = 0
	default:
		st.depth = r.IntN(200)
	}
	st.inString = st.depth == 0 || r.IntN(2) == 0
	st.escaped = st.inString && r.IntN(4) == 0
	if r.IntN(50) == 0 {
		st = blockState{depth: r.IntN(5) - 2, inString: r.IntN(2) == 0, escaped: r.IntN(2) == 0}
	}
	return st
}

func TestSkipBlocksLengthsAndOffsets(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	buf := make([]byte, 64+200)
	for n := 0; n <= 200; n++ {
		for off := 0; off < 64; off++ {
			b := buf[off : off+n]
			if n%2 == 0 {
				copy(b, blkRandom(r, n))
			} else {
				copy(b, blkJSON(r, nil, 1))
			}
			for range 4 {
				blkCheck(t, b, blkRandomState(r))
			}
		}
	}
}

func TestSkipBlocksDifferential(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
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
			// Start somewhere inside a document at the state the bytes
			// before it give, as the scanner does.
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
		skipped += blkCheck(t, b, st)
	}
	// Guard against a kernel that agrees with the reference by declining
	// everything.
	if skipped < iters*64/4 {
		t.Errorf("only %d bytes skipped over %d inputs", skipped, iters)
	}
}

func FuzzSkipBlocks(f *testing.F) {
	f.Add([]byte(`"abc\"def\\"`), uint16(0), true, false)
	f.Add([]byte(`{"a": [1, 2, {"b": "]]\\\"}"}], "c": "\\\\"}`), uint16(1), false, false)
	f.Add(bytes.Repeat([]byte(`\`), 130), uint16(3), true, true)
	f.Add(bytes.Repeat([]byte(`]`), 70), uint16(70), false, false)
	f.Add(bytes.Repeat([]byte(`[`), 70), uint16(maxBlockDepth-70), false, false)
	f.Fuzz(func(t *testing.T, data []byte, depth uint16, inString, escaped bool) {
		st := blockState{depth: int(depth), inString: inString, escaped: escaped}
		// Most of uint16 is past the limit, where nothing is ever skipped;
		// keep just past it reachable and fold the rest back.
		if st.depth > maxBlockDepth+64 {
			st.depth %= maxBlockDepth + 1
		}
		if st.depth == 0 {
			st.inString = true
		}
		if !st.inString {
			st.escaped = false
		}
		blkCheck(t, data, st)
		// Tiled, short inputs reach several blocks and every alignment of
		// their bytes to block boundaries.
		if len(data) > 0 && len(data) < 256 {
			tiled := bytes.Repeat(data, 256/len(data)+1)
			blkCheck(t, tiled, st)
			blkCheck(t, tiled[1:], st)
		}
	})
}

// blkSkipValue returns the length of the value of which b is the rest, with
// st the state at b[0], skipping whole blocks with blocks and finishing
// byte by byte as the scanner would; -1 if b ends first.
func blkSkipValue(b []byte, st blockState, blocks func([]byte, *blockState) int) int {
	lone := st.depth == 0
	i := 0
	for {
		i += blocks(b[i:], &st)
		// At least one block byte by byte: the one the kernel declined.
		for end := min(i+64, len(b)); i < end; i++ {
			blkStep(&st, b[i])
			if lone && !st.inString || !lone && st.depth == 0 {
				return i + 1
			}
		}
		if i == len(b) {
			return -1
		}
	}
}

// blkThreadMessages returns a realistic large value: the messages array of
// a ~5 MB generated thread, from just after its '['.
func blkThreadMessages(tb testing.TB) []byte {
	_, data := threadgen.New(threadgen.Options{Threads: 1, TotalBytes: 5_000_000, Seed: 1}).Thread(0)
	i := bytes.Index(data, []byte(`"messages":`))
	if i < 0 {
		tb.Fatal(`no "messages" key in the generated thread`)
	}
	rest := data[i+len(`"messages":`):]
	j := bytes.IndexByte(rest, '[')
	if j < 0 || len(bytes.TrimSpace(rest[:j])) != 0 {
		tb.Fatal(`"messages" is not an array`)
	}
	return rest[j+1:]
}

func TestSkipBlocksThread(t *testing.T) {
	msgs := blkThreadMessages(t)
	want := blkSkipValue(msgs, blockState{depth: 1}, func([]byte, *blockState) int { return 0 })
	if want < 0 || msgs[want-1] != ']' {
		t.Fatalf("byte-wise skip of the messages array = %d", want)
	}
	for name, f := range map[string]func([]byte, *blockState) int{"skipBlocks": skipBlocks, "skipBlocksRef": skipBlocksRef} {
		if got := blkSkipValue(msgs, blockState{depth: 1}, f); got != want {
			t.Errorf("%s: skip of the messages array = %d, want %d", name, got, want)
		}
	}
	// Every string in the array, skipped alone from just after its quote.
	st := blockState{depth: 1}
	for i := 0; i < want; i++ {
		was := st.inString
		blkStep(&st, msgs[i])
		if !was && st.inString {
			blkCheck(t, msgs[i+1:], blockState{inString: true})
		}
	}
}

func BenchmarkSkipBlocks(b *testing.B) {
	msgs := blkThreadMessages(b)
	want := blkSkipValue(msgs, blockState{depth: 1}, func([]byte, *blockState) int { return 0 })
	// The share of the array the kernel skips in whole blocks; the rest is
	// the byte-wise tail after each declined block.
	blocked := 0
	blkSkipValue(msgs, blockState{depth: 1}, func(b []byte, st *blockState) int {
		n := skipBlocks(b, st)
		blocked += n
		return n
	})
	run := func(name string, usesBlocks bool, skip func([]byte) int) {
		b.Run(name, func(b *testing.B) {
			if got := skip(msgs); got != want {
				b.Fatalf("skip = %d, want %d", got, want)
			}
			b.SetBytes(int64(want))
			for b.Loop() {
				skip(msgs)
			}
			if usesBlocks {
				b.ReportMetric(100*float64(blocked)/float64(want), "%blocks")
			}
		})
	}
	run("asm", true, func(m []byte) int { return blkSkipValue(m, blockState{depth: 1}, skipBlocks) })
	run("ref", true, func(m []byte) int { return blkSkipValue(m, blockState{depth: 1}, skipBlocksRef) })
	run("bytewise", false, func(m []byte) int {
		return blkSkipValue(m, blockState{depth: 1}, func([]byte, *blockState) int { return 0 })
	})
	// Memory speed: one pass over the same bytes looking for a byte that is
	// not there.
	run("indexbyte", false, func(m []byte) int {
		if bytes.IndexByte(m[:want], 0) >= 0 {
			return -1
		}
		return want
	})
}
