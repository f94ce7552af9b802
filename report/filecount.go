package report

import (
	"slices"
	"sync/atomic"
	"time"

	"github.com/amp-exporter/amp-exporter/parser/thread"
	"github.com/amp-exporter/amp-exporter/store"
)

// fileCounter counts thread files into a store that keeps the usage
// ledger, as the live exporter counts them: one Apply per thread, of the
// families the ledger is made of alone (store.StoreOptions.LedgerOnly). Items
// stamped after the report's now are left out (and counted in later), as
// the backfill leaves them to the live counters: a report shows no usage
// of a time that has not come.
type fileCounter struct {
	store *store.ThreadStore
	now   int64
	later atomic.Int64
}

func newFileCounter(o LoadOptions) *fileCounter {
	st := store.NewThreadStore(store.StoreOptions{Labels: o.Labels, Repositories: o.Repositories,
		Now: func() time.Time { return o.Now }, AppliedOnce: true, LedgerOnly: true, LedgerUnbounded: true})
	st.SetPrices(o.Prices)
	return &fileCounter{store: st, now: o.Now.UnixMilli()}
}

// SkipsLines: the report's store counts no lines, so its files are read
// without counting them (backfill.LinesSkipper).
func (c *fileCounter) SkipsLines() bool { return true }

// AddThread counts one thread (backfill.ThreadAdder).
func (c *fileCounter) AddThread(_, path string, sum *thread.Summary) error {
	if slices.ContainsFunc(sum.Items, func(it thread.Item) bool { return it.At > c.now }) {
		kept := *sum
		kept.Items = slices.DeleteFunc(slices.Clone(sum.Items), func(it thread.Item) bool {
			if it.At > c.now {
				if !it.Copied {
					c.later.Add(1)
				}
				return true
			}
			return false
		})
		sum = &kept
	}
	c.store.Apply(path, store.FileVersion{Size: 1}, sum)
	return nil
}
