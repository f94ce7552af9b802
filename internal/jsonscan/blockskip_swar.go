package jsonscan

import (
	"encoding/binary"
	"math/bits"
)

// skipBlocksSWAR is skipBlocks in portable Go: the AVX2 kernel's block
// logic on 64-bit words (SIMD within a register). Each 64-byte block
// becomes bit masks (one bit per byte) of quotes, backslashes, openers and
// closers, built eight bytes at a time; escapes are resolved with the
// carried odd-run rule, string interiors with a shift-and-XOR prefix XOR,
// brackets counted with OnesCount64. It is what architectures without a
// vector kernel (arm64 among them) run, and it is tested against
// skipBlocksRef on every architecture.
func skipBlocksSWAR(b []byte, st *blockState) int {
	if !blockStateOK(st) {
		return 0
	}
	const evenBits = 0x5555555555555555
	depth, inString, escaped := st.depth, st.inString, st.escaped
	n := 0
	for len(b)-n >= 64 {
		var quote, bslash, open, close uint64
		blk := b[n : n+64 : n+64]
		for w := 0; w < 8; w++ {
			x := binary.LittleEndian.Uint64(blk[w*8:])
			shift := uint(w * 8)
			quote |= byteMask(x, '"') << shift
			bslash |= byteMask(x, '\\') << shift
			// '[' 0x5B and '{' 0x7B differ only in 0x20; so do ']' and '}'.
			y := x | 0x2020202020202020
			open |= byteMask(y, '{') << shift
			close |= byteMask(y, '}') << shift
		}

		// Which bytes are escaped: those after an odd run of backslashes
		// (the run may have begun in an earlier block: escaped carries in).
		var esc uint64
		nextEscaped := false
		if bslash == 0 {
			if escaped {
				esc = 1
			}
		} else {
			var carry uint64
			if escaped {
				carry = 1
			}
			bs := bslash &^ carry // an escaped backslash starts no run
			follows := bs<<1 | carry
			oddStarts := bs &^ evenBits &^ follows
			sum, over := bits.Add64(oddStarts, bs, 0)
			esc = (evenBits ^ sum<<1) & follows
			nextEscaped = over != 0
		}
		q := quote &^ esc
		// Prefix XOR: bit i set when an odd number of quotes lie at or
		// before i (an opening quote counts as inside, a closing one not).
		in := q
		in ^= in << 1
		in ^= in << 2
		in ^= in << 4
		in ^= in << 8
		in ^= in << 16
		in ^= in << 32
		if inString {
			in = ^in
		}
		outside := ^in &^ q

		if bslash&outside != 0 {
			break // a backslash outside strings: the byte-wise code decides
		}
		if depth == 0 {
			if q != 0 {
				break // the lone string may end here
			}
		} else if bits.OnesCount64(close&outside) >= depth {
			break
		}
		opens := bits.OnesCount64(open & outside)
		if depth+opens > maxBlockDepth {
			break
		}
		depth += opens - bits.OnesCount64(close&outside)
		inString = in>>63 != 0
		escaped = inString && nextEscaped
		n += 64
	}
	st.depth, st.inString, st.escaped = depth, inString, escaped
	return n
}

// byteMask returns one bit per byte of x (bit i for byte i, little-endian)
// set where the byte equals c. Exact: no borrow crosses bytes.
func byteMask(x uint64, c byte) uint64 {
	const lo7, hi = 0x7F7F7F7F7F7F7F7F, 0x8080808080808080
	v := x ^ (uint64(c) * 0x0101010101010101)
	nonzero := ((v & lo7) + lo7) | v // high bit set where the byte is not zero
	z := ^nonzero & hi               // high bit set where it is zero
	// Gather the eight high bits into the low byte.
	return ((z >> 7) * 0x0102040810204080) >> 56
}
