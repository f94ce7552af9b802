// Package sat adds and multiplies int64 counts without wrapping: a sum
// past the largest int64 stays at it, so that no count or sum of counts
// (tokens, credits, fixed-point dollars) a hostile or broken source makes
// huge ever turns negative. The store, the parsers, the backfill, the
// ledger and the sums made of it (reports, the spend summary) all add up
// through it, so they saturate at the same figure.
package sat

import "math"

// Add returns a+b, or the largest (smallest) int64 where the sum would be
// past it.
func Add(a, b int64) int64 {
	s := a + b
	if (s > a) != (b > 0) { // wrapped: the sum moved against b's sign
		if b > 0 {
			return math.MaxInt64
		}
		return math.MinInt64
	}
	return s
}

// Mul returns a×b for non-negative counts, or the largest int64 where the
// product would be past it.
func Mul(a, b int64) int64 {
	if a == 0 || b == 0 {
		return 0
	}
	if a > math.MaxInt64/b {
		return math.MaxInt64
	}
	return a * b
}
