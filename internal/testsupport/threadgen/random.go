package threadgen

import (
	"math"
	"math/bits"
	"math/rand/v2"
)

// Helpers.

func lognorm(r *rand.Rand, median, s float64) float64 {
	return median * math.Exp(s*r.NormFloat64())
}

func pick[T any](r *rand.Rand, xs []T) T { return xs[r.IntN(len(xs))] }

func splitmix(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ x>>30) * 0xbf58476d1ce4e5b9
	x = (x ^ x>>27) * 0x94d049bb133111eb
	return x ^ x>>31
}

const hexDigits = "0123456789abcdef"

func randHex(r *rand.Rand, n int) string {
	b := make([]byte, n)
	for i := range b {
		b[i] = hexDigits[r.IntN(16)]
	}
	return string(b)
}

func randAlnum(r *rand.Rand, n int) string {
	const a = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
	b := make([]byte, n)
	for i := range b {
		b[i] = a[r.IntN(len(a))]
	}
	return string(b)
}

// uuid7 formats a UUIDv7: 48 bits of ms, version 7, 12 random bits, the
// RFC 4122 variant and 62 random bits, in lower case.
func uuid7(ms int64, r *rand.Rand) string {
	var u [16]byte
	m := uint64(ms)
	for i := range 6 {
		u[i] = byte(m >> (40 - 8*i))
	}
	x, y := r.Uint64(), r.Uint64()
	u[6] = 0x70 | byte(x>>60)&0x0f
	u[7] = byte(x >> 52)
	u[8] = 0x80 | byte(y>>58)&0x3f
	for i := 9; i < 16; i++ {
		u[i] = byte(y >> (8 * (15 - i)))
	}
	return formatUUID(u)
}

func uuid4(r *rand.Rand) string {
	var u [16]byte
	x, y := r.Uint64(), r.Uint64()
	for i := range 8 {
		u[i] = byte(x >> (8 * i))
		u[8+i] = byte(y >> (8 * i))
	}
	u[6] = 0x40 | u[6]&0x0f
	u[8] = 0x80 | u[8]&0x3f
	return formatUUID(u)
}

func formatUUID(u [16]byte) string {
	b := make([]byte, 0, 36)
	for i, c := range u {
		if i == 4 || i == 6 || i == 8 || i == 10 {
			b = append(b, '-')
		}
		b = append(b, hexDigits[c>>4], hexDigits[c&15])
	}
	return string(b)
}

// feistel is a keyed permutation of [0, n): it maps a thread index to its
// size rank without generating or storing the whole permutation.
type feistel struct {
	n    uint64
	half uint
	mask uint64
	keys [4]uint64
}

func newFeistel(n, seed uint64) feistel {
	b := uint(bits.Len64(max(n, 1) - 1))
	half := max(1, (b+1)/2)
	f := feistel{n: n, half: half, mask: 1<<half - 1}
	for i := range f.keys {
		seed = splitmix(seed + uint64(i))
		f.keys[i] = seed
	}
	return f
}

func (f feistel) at(i uint64) uint64 {
	x := i
	for {
		l, r := x>>f.half, x&f.mask
		for _, k := range f.keys {
			l, r = r, l^(splitmix(r^k)&f.mask)
		}
		x = l<<f.half | r
		if x < f.n {
			return x
		}
	}
}
