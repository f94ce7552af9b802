//go:build !amd64

package jsonscan

// skipBlocks is documented in blockskip.go. Without a vector kernel it is
// the reference.
func skipBlocks(b []byte, st *blockState) int { return skipBlocksRef(b, st) }
