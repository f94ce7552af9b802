package store

import "math"

// Values are counted as integers, so that sums are exact and the same in
// any order: a family's value v is kept as v × its scale (1 for counts;
// families.go sets the others), and saturates rather than wraps (package
// sat).

// scaleOf is family f's scale.
func scaleOf(f Family) float64 {
	if sc, ok := familyScale[f]; ok {
		return sc
	}
	return 1
}

// fixed converts a value of family f to its integer representation.
func fixed(f Family, v float64) int64 { return fixedAt(scaleOf(f), v) }

// fixedAt converts a value to its integer representation at a scale.
func fixedAt(scale, v float64) int64 {
	x := math.Round(v * scale)
	switch {
	case x != x || x <= 0:
		return 0
	case x >= math.MaxInt64/2:
		return math.MaxInt64 / 2
	}
	return int64(x)
}

// unfixed converts back for exposition.
func Unfixed(f Family, v int64) float64 { return float64(v) / scaleOf(f) }
