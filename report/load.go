package report

import (
	"context"
	"fmt"
	"time"

	"github.com/amp-exporter/amp-exporter/backfill"
	"github.com/amp-exporter/amp-exporter/store"
)

// LoadOptions say where the usage is read from.
type LoadOptions struct {
	// Dirs are the thread directories.
	Dirs         []string
	MaxFileBytes int64
	Workers      int
	// Prices and Labels as the live exporter's (store.Prices, its label
	// cap): the ledger then holds what its counters hold.
	Prices store.Prices
	Labels *store.LabelCap
	// Now: items stamped after it are left to a later report, as the
	// backfill leaves them to the live counters.
	Now time.Time
	// Server, when set, replays the Amp server's threads into bf; owners
	// holds the thread ids the files already gave (a thread both on disk
	// and on the server is the file's, as in the live exporter).
	Server func(ctx context.Context, bf *backfill.Backfill, owners *store.Owners) error
}

// LoadStats say what was read.
type LoadStats struct {
	Files, Duplicates int
	Failed            map[string]int // thread files that could not be read, by reason
	Stats             backfill.Stats
}

// Load reads the thread files (and, with Server, the Amp server's
// threads) into a ledger: each thread replayed by the backfill in
// 15-minute buckets, counted by the store under the counters' rules.
func Load(ctx context.Context, o LoadOptions) (*Ledger, LoadStats, error) {
	l := NewLedger()
	if o.Now.IsZero() {
		o.Now = time.Now()
	}
	bf, err := backfill.New(backfill.Options{
		Until: o.Now, Now: o.Now, Step: Bucket, Buckets: true,
		Prices: o.Prices, Labels: o.Labels, PerThread: l.AddThread,
	})
	if err != nil {
		return nil, LoadStats{}, fmt.Errorf("report: %w", err)
	}
	files, err := backfill.ThreadFiles(o.Dirs)
	if err != nil {
		return nil, LoadStats{}, err
	}
	owners := store.NewOwners()
	scan, err := backfill.ScanFiles(ctx, bf, files, o.MaxFileBytes, o.Workers, owners, nil)
	if err != nil {
		return nil, LoadStats{}, fmt.Errorf("thread files: %w", err)
	}
	if o.Server != nil {
		if err := o.Server(ctx, bf, owners); err != nil {
			return nil, LoadStats{}, err
		}
	}
	return l, LoadStats{Files: scan.Files, Duplicates: scan.Duplicates, Failed: scan.Failed, Stats: bf.Stats()}, nil
}
