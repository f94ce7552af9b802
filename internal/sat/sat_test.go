package sat

import (
	"math"
	"math/big"
	"testing"
)

func TestAdd(t *testing.T) {
	const top, bottom = math.MaxInt64, math.MinInt64
	for _, c := range []struct{ a, b, want int64 }{
		{0, 0, 0}, {1, 2, 3}, {-1, 1, 0}, {-5, -6, -11},
		{top, 0, top}, {top, 1, top}, {top, top, top}, {top - 1, 1, top},
		{4e18, 4e18, 8e18}, {8e18, 4e18, top},
		{bottom, -1, bottom}, {bottom, bottom, bottom}, {bottom + 1, -1, bottom},
		{top, bottom, -1}, {top, -1, top - 1}, {bottom, 1, bottom + 1},
	} {
		for _, ab := range [][2]int64{{c.a, c.b}, {c.b, c.a}} {
			if got := Add(ab[0], ab[1]); got != c.want {
				t.Errorf("Add(%d, %d) = %d, want %d", ab[0], ab[1], got, c.want)
			}
		}
	}
}

func TestMul(t *testing.T) {
	const top = math.MaxInt64
	for _, c := range []struct{ a, b, want int64 }{
		{0, top, 0}, {top, 0, 0}, {1, top, top}, {2, 3, 6},
		{top/2 + 1, 2, top}, {top / 2, 2, top - 1}, {3_037_000_500, 3_037_000_500, top}, {3_037_000_499, 3_037_000_499, 3_037_000_499 * 3_037_000_499},
	} {
		if got := Mul(c.a, c.b); got != c.want {
			t.Errorf("Mul(%d, %d) = %d, want %d", c.a, c.b, got, c.want)
		}
	}
}

// FuzzAdd: Add is the exact sum clamped to int64.
func FuzzAdd(f *testing.F) {
	f.Add(int64(math.MaxInt64), int64(1))
	f.Add(int64(math.MinInt64), int64(-1))
	f.Add(int64(4e18), int64(4e18))
	f.Fuzz(func(t *testing.T, a, b int64) {
		exact := new(big.Int).Add(big.NewInt(a), big.NewInt(b))
		want := exact
		if exact.Cmp(big.NewInt(math.MaxInt64)) > 0 {
			want = big.NewInt(math.MaxInt64)
		} else if exact.Cmp(big.NewInt(math.MinInt64)) < 0 {
			want = big.NewInt(math.MinInt64)
		}
		if got := Add(a, b); got != want.Int64() {
			t.Errorf("Add(%d, %d) = %d, want %v", a, b, got, want)
		}
	})
}
