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
}

// NewBudget returns a budget of cells (the unit of MaxCells: a line
// compared or a step of a search).
func NewBudget(cells int64) Budget { return Budget{left: cells} }

// Used is the work spent so far, in cells.
func (b *Budget) Used() int64 { return b.used }

// Diff is Diff under the budget. An edit whose lines differ only in a run
// at one place (the lines left after the common prefix and suffix are on
// one side only) costs nothing and is always Exact; so is one whose search
// costs no more than its lines. Past the budget any other is Uncounted;
// the search that overruns it stops there and leaves its edit Uncounted
// too, unless it was past MaxCells (Approximate, as Diff).
func (b *Budget) Diff(old, new string) (added, removed int64, c Count) {
	added, removed, c, work := diff(old, new, b.left)
	b.used += work
	b.left = max(b.left-work, 0)
	return added, removed, c
}
