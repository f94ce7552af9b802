package linecount

import (
	"math"
	"math/bits"
)

// MaxCells bounds the work of one Diff: past that many cells visited by
// the search (diagonal steps and snake steps), Diff stops the exact search
// and approximates (approximate). Myers' algorithm costs O((N+M)·D) time
// for N and M lines and D lines changed, and O(N+M) memory whatever D: the
// bound keeps a multi-megabyte rewrite in one edit from costing seconds of
// CPU (two unrelated 2 MB files: about a third of a second). Two 2 MB
// files with a few hundred scattered changes stay far below it, and exact.
const MaxCells = 1 << 24

// Diff returns the lines added and removed by turning old into new, as
// Amp's thread row for an edit counts them: the shortest line diff
// (Myers) of the texts split on "\n" as JavaScript splits them, so
// added + removed is the least number of lines inserted and deleted, a
// line that only moved counts as removed and added, a last line break on
// one side only is an empty last line added or removed, and an empty text
// is one empty line. Equal texts change nothing. exact is false when the
// diff was too big for MaxCells and the counts are approximate.
//
// Diff bounds the work of one diff only; Budget.Diff bounds that of many.
func Diff(old, new string) (added, removed int64, exact bool) {
	if old == new {
		return 0, 0, true
	}
	// The lines of a usual edit fit arrays on the stack: no allocation.
	var abuf, bbuf [64]string
	a, b := splitInto(abuf[:0], old), splitInto(bbuf[:0], new)
	added, removed, c, _ := diff(a, b, math.MaxInt64)
	return added, removed, c == Exact
}

// diff is Diff of the lines a and b under a budget of left cells (at most
// MaxCells are spent on one diff whatever left is). work is what it spent.
// Past left, only a search that costs no more than the lines it compares
// (cheap) is made; any other is Uncounted.
func diff(a, b []string, left int64) (added, removed int64, c Count, work int64) {
	// Common prefix and suffix cost nothing to the search.
	for len(a) > 0 && len(b) > 0 && a[0] == b[0] {
		a, b = a[1:], b[1:]
	}
	for len(a) > 0 && len(b) > 0 && a[len(a)-1] == b[len(b)-1] {
		a, b = a[:len(a)-1], b[:len(b)-1]
	}
	n, m := len(a), len(b)
	if n == 0 || m == 0 {
		return int64(m), int64(n), Exact, 0
	}
	// within: a search of cost cells may run; one that costs no more than
	// the lines it compares runs whatever is left, as it costs what
	// splitting them did.
	within := func(cost int64) bool { return cost <= left || cost <= int64(n+m) }
	// The bit-parallel LCS when it is cheap (the usual edit: a few dozen
	// lines each side), else Myers, whose cost follows the lines changed.
	short, long := min(n, m), max(n, m)
	if cost := int64(long) * int64(short); short <= 64 && cost <= maxWordCompares {
		if !within(cost) {
			return 0, 0, Uncounted, 0
		}
		var l int
		if n <= m {
			l = lcsWord(b, a)
		} else {
			l = lcsWord(a, b)
		}
		return int64(m - l), int64(n - l), Exact, cost
	}
	if cost := int64(long) * int64((short+63)/64); short <= maxBitsLines && cost <= maxBitsWork {
		if !within(cost) {
			return 0, 0, Uncounted, 0
		}
		var l int
		if n <= m {
			l = lcsBits(b, a)
		} else {
			l = lcsBits(a, b)
		}
		return int64(m - l), int64(n - l), Exact, cost
	} else if cost <= maxBitsWork {
		// Too many lines for a mask per line, few enough for the
		// bit-parallel LCS to cost less than Myers' search may.
		if !within(cost) {
			return 0, 0, Uncounted, 0
		}
		var l int
		if n <= m {
			l = lcsBitsSparse(b, a, (n+63)/64)
		} else {
			l = lcsBitsSparse(a, b, (m+63)/64)
		}
		return int64(m - l), int64(n - l), Exact, cost
	}
	// Myers' cost is known only once it has run: it may spend what is
	// left, or its lines when less is, and no more than MaxCells.
	limit := min(MaxCells, max(left, int64(n+m)))
	d, ok, work := myers(a, b, limit)
	if !ok && limit < MaxCells {
		return 0, 0, Uncounted, work
	} else if !ok {
		add, rem := approximate(a, b)
		return add, rem, Approximate, work
	}
	// d = inserted + deleted, m − n = inserted − deleted.
	return int64((d + m - n) / 2), int64((d - m + n) / 2), Exact, work
}

// myers returns the edit distance (lines inserted plus deleted) of a and b
// by Myers' greedy O((N+M)·D) algorithm, keeping only the furthest point of
// each diagonal (the distance, not the script, is wanted: O(N+M) memory).
// It gives up (false) once more than budget cells were looked at; work is
// the cells it looked at.
func myers(a, b []string, budget int64) (d int, ok bool, work int64) {
	n, m := len(a), len(b)
	// Row d costs at least d+1 cells: the search gives up by the row past
	// which the rows' cells alone exceed budget, and v needs no diagonal
	// beyond it (a search given little does not allocate for every line).
	maxD := min(n+m, rowsWithin(budget))
	off := maxD + 1
	v := make([]int, 2*maxD+3)
	for d := 0; d <= maxD; d++ {
		for k := -d; k <= d; k += 2 {
			var x int
			if k == -d || (k != d && v[off+k-1] < v[off+k+1]) {
				x = v[off+k+1] // down: an insertion
			} else {
				x = v[off+k-1] + 1 // right: a deletion
			}
			y := x - k
			for x < n && y < m && a[x] == b[y] {
				x++
				y++
				work++
			}
			v[off+k] = x
			if x >= n && y >= m {
				return d, true, work
			}
		}
		work += int64(d + 1)
		if work > budget {
			return 0, false, work
		}
	}
	if maxD < n+m {
		return 0, false, work // not reached: rowsWithin's rows overrun budget
	}
	return maxD, true, work
}

// rowsWithin is the least d for which rows 0 to d of Myers' search, d+1
// cells each at least, cost more than budget: (d+1)(d+2)/2 > budget.
func rowsWithin(budget int64) int {
	if budget >= 1<<60 {
		return math.MaxInt32
	}
	d := max(int64(math.Sqrt(2*float64(max(budget, 0))))-2, 0)
	for (d+1)*(d+2)/2 <= budget {
		d++
	}
	return int(d)
}

// approximate counts the lines of a and b that the other lacks, as
// multisets: exact when the lines common to both keep their order, fewer
// than the shortest diff when the edit also moved lines. Linear in time and
// memory.
func approximate(a, b []string) (added, removed int64) {
	count := make(map[string]int, len(a))
	for _, l := range a {
		count[l]++
	}
	common := 0
	for _, l := range b {
		if count[l] > 0 {
			count[l]--
			common++
		}
	}
	return int64(len(b) - common), int64(len(a) - common)
}

// The bit-parallel LCS is used for at most maxBitsWork word operations;
// with a match mask per distinct line (lcsBits) for at most maxBitsLines
// lines on its shorter side (2 MB of masks), else with masks for the
// lines that repeat most only (lcsBitsSparse).
const (
	maxBitsLines = 4096
	maxBitsWork  = 1 << 20
)

// maxWordCompares bounds the line comparisons of lcsWord: past it, hashing
// the lines once (lcsBits) is cheaper than comparing them pairwise.
const maxWordCompares = 1 << 12

// lcsWord is lcsBits for a b of at most 64 lines in one word, the match
// masks made by comparing the lines directly: for the dozen lines of a
// usual edit that costs less than a map of them (unequal lines mostly
// differ in length, which is compared first).
func lcsWord(a, b []string) int {
	v := ^uint64(0)
	for _, l := range a {
		var m uint64
		for j, x := range b {
			if x == l {
				m |= 1 << j
			}
		}
		v = (v + v&m) | (v &^ m)
	}
	mask := ^uint64(0) >> (64 - len(b))
	return len(b) - bits.OnesCount64(v&mask)
}

// lcsBits returns the length of the longest common subsequence of a and b
// by the bit-parallel algorithm (Allison–Dix, as in Hyyrö 2004): one
// bitset over b, updated for each line of a with an add and a few logical
// operations, O(len(a)·len(b)/64) whatever the lines changed. b should be
// the shorter side.
func lcsBits(a, b []string) int {
	w := (len(b) + 63) / 64
	ids := make(map[string]int32, len(b))
	var masks []uint64
	for j, l := range b {
		id, ok := ids[l]
		if !ok {
			id = int32(len(masks) / w)
			ids[l] = id
			masks = append(masks, make([]uint64, w)...)
		}
		masks[int(id)*w+j/64] |= 1 << (j % 64)
	}
	v := make([]uint64, w)
	for k := range v {
		v[k] = ^uint64(0)
	}
	for _, l := range a {
		id, ok := ids[l]
		if !ok {
			continue // no line of b matches: v stays
		}
		m := masks[int(id)*w : int(id)*w+w]
		var carry uint64
		for k := range v {
			u := v[k] & m[k]
			var sum uint64
			sum, carry = bits.Add64(v[k], u, carry)
			v[k] = sum | (v[k] &^ m[k])
		}
	}
	// Each 0 bit is one line of the LCS; the bits past len(b) stay 1.
	ones := 0
	for _, x := range v {
		ones += bits.OnesCount64(x)
	}
	return w*64 - ones
}

// lcsBitsSparse is lcsBits for a b of more lines than maxBitsLines, where
// a match mask per distinct line of b (its lines times its words) would
// take megabytes: a line that occurs at least dense times in b keeps a
// mask (with dense the words of a mask, at most 64 such lines), any other
// has its positions set in a scratch mask for its row and cleared after.
// The same O(len(a)·len(b)/64) time, O(len(b)) memory.
func lcsBitsSparse(a, b []string, dense int) int {
	w := (len(b) + 63) / 64
	ids := make(map[string]int32)
	of := make([]int32, len(b)) // the id of each line of b
	var occ []int32             // occurrences of each id, then where its positions start
	for j, l := range b {
		id, ok := ids[l]
		if !ok {
			id = int32(len(occ))
			ids[l] = id
			occ = append(occ, 0)
		}
		occ[id]++
		of[j] = id
	}
	// The positions of each id, grouped: id's are pos[start[id]:start[id+1]].
	start := make([]int32, len(occ)+1)
	for id, c := range occ {
		start[id+1] = start[id] + c
	}
	pos := make([]int32, len(b))
	next := occ // reused: the next free slot of each id
	copy(next, start[:len(occ)])
	for j, id := range of {
		pos[next[id]] = int32(j)
		next[id]++
	}
	// A mask for the lines that repeat: at index maskAt[id], -1 for none.
	maskAt := of[:len(occ)] // reused: of is read no more
	var masks []uint64
	for id := range maskAt {
		if int(start[id+1]-start[id]) < dense {
			maskAt[id] = -1
			continue
		}
		maskAt[id] = int32(len(masks) / w)
		masks = append(masks, make([]uint64, w)...)
		m := masks[len(masks)-w:]
		for _, j := range pos[start[id]:start[id+1]] {
			m[j/64] |= 1 << (j % 64)
		}
	}
	scratch := make([]uint64, w)
	v := make([]uint64, w)
	for k := range v {
		v[k] = ^uint64(0)
	}
	for _, l := range a {
		id, ok := ids[l]
		if !ok {
			continue // no line of b matches: v stays
		}
		m, at := scratch, pos[start[id]:start[id+1]]
		if k := maskAt[id]; k >= 0 {
			m, at = masks[int(k)*w:int(k)*w+w], nil
		}
		for _, j := range at {
			m[j/64] |= 1 << (j % 64)
		}
		var carry uint64
		for k := range v {
			u := v[k] & m[k]
			var sum uint64
			sum, carry = bits.Add64(v[k], u, carry)
			v[k] = sum | (v[k] &^ m[k])
		}
		for _, j := range at {
			m[j/64] = 0
		}
	}
	ones := 0
	for _, x := range v {
		ones += bits.OnesCount64(x)
	}
	return w*64 - ones
}
