package ledger

import (
	"math"
	"testing"
)

// Sums of usage stop at the largest (or smallest) int64 rather than wrap:
// two items of 4e18 tokens are not a negative total.
func TestUsageSumsSaturate(t *testing.T) {
	const big = 4_000_000_000_000_000_000
	tests := []struct {
		name   string
		a, b   Usage
		want   Usage
		tokens int64 // of want
	}{
		{"small", Usage{Input: 1, Output: 2, Cost: 3}, Usage{Input: 4, CacheRead: 5, Credits: 6}, Usage{Input: 5, Output: 2, CacheRead: 5, Credits: 6, Cost: 3}, 12},
		{"every field at the top",
			Usage{Input: big, Output: big, CacheCreation: big, CacheRead: big, Credits: math.MaxInt64 - 1, Cost: math.MaxInt64 / 2},
			Usage{Input: big, Output: big, CacheCreation: big, CacheRead: big, Credits: 2, Cost: math.MaxInt64/2 + 2},
			Usage{Input: 2 * big, Output: 2 * big, CacheCreation: 2 * big, CacheRead: 2 * big, Credits: math.MaxInt64, Cost: math.MaxInt64}, math.MaxInt64},
		{"past the top", Usage{Input: math.MaxInt64, Cost: math.MaxInt64}, Usage{Input: 1, Cost: math.MaxInt64},
			Usage{Input: math.MaxInt64, Cost: math.MaxInt64}, math.MaxInt64},
		{"tokens of two types", Usage{Input: 2 * big, CacheRead: 2 * big}, Usage{}, Usage{Input: 2 * big, CacheRead: 2 * big}, math.MaxInt64},
		// A ledger read from elsewhere may hold anything.
		{"below the bottom", Usage{Input: math.MinInt64 + 1, Cost: -big}, Usage{Input: -2, Cost: -2 * big},
			Usage{Input: math.MinInt64, Cost: math.MinInt64}, math.MinInt64},
		{"mixed signs", Usage{Input: math.MaxInt64, Output: -1}, Usage{Input: -1}, Usage{Input: math.MaxInt64 - 1, Output: -1}, math.MaxInt64 - 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := tt.a
			got.Add(tt.b)
			if got != tt.want {
				t.Errorf("%+v + %+v = %+v, want %+v", tt.a, tt.b, got, tt.want)
			}
			if n := got.Tokens(); n != tt.tokens {
				t.Errorf("tokens of %+v: %d, want %d", got, n, tt.tokens)
			}
		})
	}
}
