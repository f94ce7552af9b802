//go:build !amd64

package jsonscan

// skipBlocks is documented in blockskip.go. Without a vector kernel it is
// the portable word-at-a-time version (blockskip_swar.go), ~3× the
// byte-wise reference.
func skipBlocks(b []byte, st *blockState) int { return skipBlocksSWAR(b, st) }
