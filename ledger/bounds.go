package ledger

import (
	"math"
	"time"

	"github.com/amp-exporter/amp-exporter/parser/thread"
)

// Item times a thread cannot hold (a clock at 1970, a field never set, a
// clock years ahead) would stretch a history over decades: one usage
// stamped 1970-01-01 made a backfill of six 2026 threads 27 times larger,
// and would put a day of 1970 in a report. Such an item is still counted,
// at the nearest time its thread can hold. The backfill and the ledgers
// place items by the same rule.

// AmpBegan is the default floor of item times: Amp was first released in
// 2025 (a research preview in May), so nothing it recorded is older than
// the start of that year. A time before it is a broken clock or a field
// that was never set (1970-01-01 and the like).
var AmpBegan = time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)

// Why an item's time was bounded.
const (
	// BoundBeforeCreated: an item of the thread's own (not one a fork
	// copied from its parent, nor a ledger event) stamped before the
	// thread was created; it counts at the thread's created.
	BoundBeforeCreated = "before_created"
	// BoundBeforeAmp: stamped before Floor, in a thread whose created is
	// no help (missing, or itself before Floor); it counts at the thread's
	// earliest plausible time, or in the first sample when it has none.
	BoundBeforeAmp = "before_amp"
	// BoundFuture: stamped after Now.
	BoundFuture = "future"
)

// createdSlack is how far before its thread's created an item stamped by
// the client's clock (as the thread is) may be stamped and keep its time.
const createdSlack = int64(time.Hour / time.Millisecond)

// Bounds are the times an item can have, epoch ms.
type Bounds struct {
	Floor, Now int64
}

// ThreadFloor is where an item stamped at a time its thread cannot hold
// is placed: its created, when that is plausible; else the earliest
// plausible time of its own items; 0 when it has none.
func (b Bounds) ThreadFloor(sum *thread.Summary) int64 {
	if sum.Created >= b.Floor && sum.Created <= b.Now {
		return sum.Created
	}
	lo := int64(0)
	for i := range sum.Items {
		if t := sum.Items[i].At; !sum.Items[i].Copied && t >= b.Floor && t <= b.Now && (lo == 0 || t < lo) {
			lo = t
		}
	}
	return lo
}

// ItemTime returns the time an item counts at, and why it is not its own
// ("" when it is); an item after Now is at math.MaxInt64. lo is the
// thread's floor (ThreadFloor). An item without any time (0) stays so.
//
// A ledger event keeps its stamp however long before its thread's created
// it is: the Amp server stamps it when it bills the tokens, while the
// client's clock stamped the thread, and a client clock hours ahead (one
// keeping local time read as UTC) puts the thread after its own spending.
// The server's stamp is when the tokens were spent, and where ccusage
// counts them.
func (b Bounds) ItemTime(sum *thread.Summary, lo int64, it *thread.Item) (int64, string) {
	t := it.At
	// A fork's copied items are its parent's, older than the fork.
	ownClock := !it.Copied && !it.IsLedger()
	switch {
	case t == 0:
		return 0, ""
	case t > b.Now:
		return math.MaxInt64, BoundFuture
	case t < b.Floor:
		if lo == sum.Created && lo != 0 && ownClock {
			return lo, BoundBeforeCreated
		}
		return lo, BoundBeforeAmp
	case t < sum.Created-createdSlack && lo == sum.Created && ownClock:
		return lo, BoundBeforeCreated
	}
	return t, ""
}
