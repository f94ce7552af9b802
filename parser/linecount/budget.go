package linecount

// Count says how Budget.Diff counted an edit.
type Count uint8

const (
	// Exact: the shortest diff's lines, as Amp counts them.
	Exact Count = iota
	// Approximate: the diff alone was past MaxCells, and the lines each
	// side lacks from the other were counted (approximate).
	Approximate
	// Uncounted: the budget was spent before this diff, which needed a
	// search; its lines are not counted.
	Uncounted
)

// Budget bounds the diff work of many Diffs, the edits of one thread:
// MaxCells bounds one diff, not how many a thread holds, and a thread is
// parsed again whole at every change. The zero Budget has nothing left.
type Budget struct {
	left, used int64
	// a and b hold the lines of the texts diffed, reused from diff to
	// diff.
	a, b []string
}

// NewBudget returns a budget of cells (the unit of MaxCells: a line
// compared or a step of a search).
func NewBudget(cells int64) Budget { return Budget{left: cells} }

// maxKeptLines bounds the line buffers a Budget keeps between diffs: one
// huge edit should not pin them for good.
const maxKeptLines = 1 << 16

// Reset gives b cells anew and forgets the work spent, keeping its
// buffers.
func (b *Budget) Reset(cells int64) {
	b.left, b.used = cells, 0
	if cap(b.a) > maxKeptLines || cap(b.b) > maxKeptLines {
		b.a, b.b = nil, nil
	}
}

// Used is the work spent so far, in cells.
func (b *Budget) Used() int64 { return b.used }

// Diff is Diff under the budget. An edit whose lines differ only in a run
// at one place (the lines left after the common prefix and suffix are on
// one side only) costs nothing and is always Exact; so is one whose search
// costs no more than its lines. Past the budget any other is Uncounted;
// the search that overruns it stops there and leaves its edit Uncounted
// too, unless it was past MaxCells (Approximate, as Diff).
func (b *Budget) Diff(old, new string) (added, removed int64, c Count) {
	if old == new {
		return 0, 0, Exact
	}
	var work int64
	b.a, b.b = splitInto(b.a[:0], old), splitInto(b.b[:0], new)
	added, removed, c, work = diff(b.a, b.b, b.left)
	clear(b.a) // keep no string alive past the call
	clear(b.b)
	b.used += work
	b.left = max(b.left-work, 0)
	return added, removed, c
}
