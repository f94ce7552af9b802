package jsonscan

import "golang.org/x/sys/cpu"

// useAVX2 selects the vector kernel. It needs AVX2 for the byte compares,
// BMI1 for ANDN, POPCNT for counting brackets and PCLMULQDQ for the prefix
// XOR that turns quote positions into string interiors.
var useAVX2 = cpu.X86.HasAVX2 && cpu.X86.HasBMI1 && cpu.X86.HasPOPCNT && cpu.X86.HasPCLMULQDQ

// skipBlocksAVX2 is the kernel behind skipBlocks. It takes and returns the
// state as scalars rather than through a *blockState so that go vet can
// check every frame offset the assembly uses. It assumes blockStateOK.
//
//go:noescape
func skipBlocksAVX2(b []byte, depth int, inString, escaped bool) (n, depthOut int, inStringOut, escapedOut bool)

// skipBlocks is documented in blockskip.go.
func skipBlocks(b []byte, st *blockState) int {
	if !useAVX2 {
		return skipBlocksRef(b, st)
	}
	if len(b) < 64 || !blockStateOK(st) {
		return 0
	}
	n, depth, inString, escaped := skipBlocksAVX2(b, st.depth, st.inString, st.escaped)
	st.depth, st.inString, st.escaped = depth, inString, escaped
	return n
}
