package report

import (
	"context"
	"fmt"
	"time"

	"github.com/amp-exporter/amp-exporter/backfill"
	"github.com/amp-exporter/amp-exporter/parser/thread"
	"github.com/amp-exporter/amp-exporter/store"
)

// LoadOptions say where the usage is read from.
type LoadOptions struct {
	// Dirs are the thread directories.
	Dirs []string
	// Files, when set, gives the thread files of Dirs
	// (backfill.ThreadFiles), listed meanwhile; nil: Load lists them.
	Files        func() ([]string, error)
	MaxFileBytes int64
	Workers      int
	// Prices and Labels as the live exporter's (store.Prices, its label
	// cap): the ledger then holds what its counters hold.
	Prices store.Prices
	Labels *store.LabelCap
	// Repositories: the repository label's switch and rules, as the
	// exporter's (nil: no thread has a repository).
	Repositories *store.Repositories
	// Now: items stamped after it are left to a later report, as the
	// backfill leaves them to the live counters.
	Now time.Time
	// Server, when set, syncs the Amp server's threads into c (the store
	// the server source's syncer fills); owners holds the thread ids the
	// files already gave (a thread both on disk and on the server is the
	// file's, as in the live exporter).
	Server func(ctx context.Context, c *ServerCache, owners *store.Owners) error
	// Cache keeps the server's threads between reports (OpenServerCache);
	// nil: an empty one, every thread is read.
	Cache *ServerCache
	// Progress, if not nil, is told how many thread files of total were
	// read, after each.
	Progress func(done, total int)
}

// LoadStats say what was read.
type LoadStats struct {
	Files, Duplicates int
	Failed            map[string]int // thread files that could not be read, by reason
	// ServerThreads are the server's threads in the report, ServerFetched
	// those of them read from the server this time (the others were
	// unchanged since the cache kept them).
	ServerThreads, ServerFetched int
	// Later counts the items stamped after Now, left out.
	Later int64
}

// Load reads the thread files (and, with Server, the Amp server's
// threads) into a ledger: each thread replayed by the backfill in
// 15-minute buckets, counted by the store under the counters' rules.
func Load(ctx context.Context, o LoadOptions) (*Ledger, LoadStats, error) {
	l := NewLedger()
	if o.Now.IsZero() {
		o.Now = time.Now()
	}
	list := o.Files
	if list == nil {
		list = func() ([]string, error) { return backfill.ThreadFiles(o.Dirs) }
	}
	files, err := list()
	if err != nil {
		return nil, LoadStats{}, err
	}
	owners := store.NewOwners()
	var progress func(int)
	if o.Progress != nil {
		progress = func(done int) { o.Progress(done, len(files)) }
	}
	// Each thread file is counted once, by a store as the exporter's,
	// and its ledger taken (store/ledger.go): row for row what replaying
	// it bucket by bucket gives, without the replay.
	counter := newFileCounter(o)
	scan, err := backfill.ScanFiles(ctx, counter, files, o.MaxFileBytes, o.Workers, owners, progress)
	if err != nil {
		return nil, LoadStats{}, fmt.Errorf("thread files: %w", err)
	}
	l.AddSorted(counter.store.Ledger())
	st := LoadStats{Files: scan.Files, Duplicates: scan.Duplicates, Failed: scan.Failed, Later: counter.later.Load()}
	if o.Server != nil {
		c := o.Cache
		if c == nil {
			c, _ = OpenServerCache("", "")
		}
		sbf, err := backfill.New(backfill.Options{
			Until: o.Now, Now: o.Now, Step: Bucket, Buckets: true,
			Prices: o.Prices, Labels: o.Labels, Repositories: o.Repositories, PerThread: c.received,
		})
		if err != nil {
			return nil, LoadStats{}, fmt.Errorf("report: %w", err)
		}
		c.count = func(path string, sum *thread.Summary) error { return sbf.AddThread(store.SourceAmpServer, path, sum) }
		if err := o.Server(ctx, c, owners); err != nil {
			return nil, LoadStats{}, err
		}
		c.AddTo(l, owners)
		st.ServerThreads, st.ServerFetched = c.Threads()
		st.Later += sbf.Stats().Later
	}
	return l, st, nil
}
