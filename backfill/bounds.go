package backfill

import "github.com/amp-exporter/amp-exporter/ledger"

// Item times a thread cannot hold are placed by the ledger's rule
// (ledger.Bounds): the backfill, the report and the exporter's ledger put
// an item at the same time.

// AmpBegan is the default floor of item times (ledger.AmpBegan).
var AmpBegan = ledger.AmpBegan

// Why an item's time was bounded (Stats.Bounded).
const (
	BoundBeforeCreated = ledger.BoundBeforeCreated
	BoundBeforeAmp     = ledger.BoundBeforeAmp
	// BoundFuture: stamped after Now. It is left out of the history, as
	// items after Until are: the live counters count it.
	BoundFuture = ledger.BoundFuture
)

// bounds are the backfill's Floor and Now.
func (b *Backfill) bounds() ledger.Bounds {
	return ledger.Bounds{Floor: b.opts.Floor.UnixMilli(), Now: b.opts.Now.UnixMilli()}
}
