package jsonscan

// Skipping a large value byte by byte costs a branch per byte, and Amp
// threads are mostly such values: tool outputs full of escaped quotes and
// whole message objects the caller never looks at. skipBlocks lets the
// scanner hand whole 64-byte blocks to a vector kernel (simdjson-style: one
// bit per byte for quotes, backslashes and brackets, escapes resolved with
// carries, string interiors with a prefix XOR) and fall back to its
// byte-wise code only for the block in which the value may end.
//
// The kernel never finds where the value ends; it only proves that a block
// cannot contain the end. That keeps it cheap (counts of brackets per block
// instead of a walk to the exact closing byte) and means stopping early is
// never wrong, only slower: the caller's byte-wise code is the authority on
// everything the kernel declines.

// blockState is where a skip stands inside the value being skipped.
type blockState struct {
	depth    int  // '{' and '[' opened and not yet closed, outside strings
	inString bool // inside a string (its opening quote already consumed)
	escaped  bool // inString, and the next byte is escaped (the previous byte was a backslash ending an odd run of backslashes)
}

// maxBlockDepth is the scanner's nesting limit (maxDepth). A block that
// could take the nesting past it is left to the byte-wise code, which
// enforces the limit, so skipping in blocks never hides a document that is
// too deep.
const maxBlockDepth = 10000

// skipBlocks advances over whole 64-byte blocks at the start of b, with st
// describing the state at b[0]. It stops, without consuming it, at the first
// block in which the skipped value might end or in which the nesting might
// pass maxBlockDepth, or when fewer than 64 bytes remain. It returns the
// number of bytes consumed (a multiple of 64) and leaves in *st the state at
// b[n].
//
// "Might end": if st.depth == 0 at the block's start (which implies
// st.inString: a lone string is being skipped), the block contains an
// unescaped quote; otherwise the number of '}' and ']' outside strings in
// the block is >= the depth at the block's start.
// "Might pass": depth at block start + number of '{' and '[' outside
// strings in the block > maxBlockDepth.
//
// It also stops at a block holding a backslash outside strings. There a
// branchless escape computation cannot follow the byte-wise rules (outside
// strings a backslash escapes nothing, so in \" the quote opens a string,
// yet a carry-based escape mask would call it escaped), and valid JSON never
// has one, so such input is left to the byte-wise code rather than made
// exact at a cost to every block.
//
// Call only with st.depth > 0 || st.inString, and st.escaped only when
// st.inString. A state breaking these, or with st.depth outside
// [0, maxBlockDepth], consumes nothing: such a skip has already ended or
// failed, and the byte-wise code must say so.
//
// skipBlocks is defined per architecture: an AVX2 kernel on amd64 when the
// CPU has it, skipBlocksRef elsewhere.

// blockStateOK reports whether st is a state skipBlocks may advance from.
// The kernel relies on it: with depth in [0, maxBlockDepth] and the
// invariants holding at entry, they hold after every block it consumes, so
// the per-block checks need no special cases.
func blockStateOK(st *blockState) bool {
	return st.depth >= 0 && st.depth <= maxBlockDepth &&
		(st.depth > 0 || st.inString) &&
		(st.inString || !st.escaped)
}

// skipBlocksRef is skipBlocks written byte by byte. It is the portable
// implementation and the oracle the kernel is tested against, so it follows
// the stop rule literally rather than cleverly: each block is run on a copy
// of the state and committed only if the rule lets it go.
func skipBlocksRef(b []byte, st *blockState) int {
	if !blockStateOK(st) {
		return 0
	}
	n := 0
	for len(b)-n >= 64 {
		s := *st
		opens, closes := 0, 0
		quote := false     // some quote opened or closed a string
		backslash := false // some backslash stood outside strings
		for _, c := range b[n : n+64] {
			if s.inString {
				switch {
				case s.escaped:
					s.escaped = false
				case c == '\\':
					s.escaped = true
				case c == '"':
					s.inString = false
					quote = true
				}
				continue
			}
			switch c {
			case '"':
				s.inString = true
				quote = true
			case '{', '[':
				opens++
			case '}', ']':
				closes++
			case '\\':
				backslash = true
			}
		}
		if backslash {
			break
		}
		if st.depth == 0 {
			// A lone string: its first unescaped quote closes it.
			if quote {
				break
			}
		} else if closes >= st.depth {
			// Brackets are only counted, so enough closers anywhere in the
			// block could bring the depth to zero.
			break
		}
		if st.depth+opens > maxBlockDepth {
			break
		}
		s.depth = st.depth + opens - closes
		*st = s
		n += 64
	}
	return n
}
