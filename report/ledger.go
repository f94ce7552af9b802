package report

import (
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/amp-exporter/amp-exporter/backfill"
	"github.com/amp-exporter/amp-exporter/ledger"
	"github.com/amp-exporter/amp-exporter/store"
)

// Bucket is the ledger's unit of time (ledger.Bucket).
const Bucket = ledger.Bucket

// Undated is the Start of usage without any time (ledger.Undated).
const Undated = ledger.Undated

// Usage is what was spent (ledger.Usage).
type Usage = ledger.Usage

// Entry is one row of the ledger (ledger.Entry).
type Entry = ledger.Entry

type entryKey struct {
	start                int64
	session, model, repo string
}

// Ledger collects the usage of threads per bucket, thread and model. It is
// safe for concurrent use.
type Ledger struct {
	mu   sync.Mutex
	rows map[entryKey]*Usage
	// sorted are entries added whole (AddSorted): in the order of
	// ledger.Compare, one per key.
	sorted []Entry
	// coarsened are the stretches a running exporter's ledger merged
	// rows over (FetchLedger); a ledger read from the sources has none.
	coarsened []ledger.Span
}

// Coarsened returns the stretches of time whose rows the exporter the
// ledger came from merged to keep long threads bounded (ledger.Span):
// ledger.InexactDays says which days of a zone they may put off.
func (l *Ledger) Coarsened() []ledger.Span { return l.coarsened }

// NewLedger returns an empty ledger.
func NewLedger() *Ledger { return &Ledger{rows: map[entryKey]*Usage{}} }

// AddThread adds what one thread counted, as the backfill replays it with
// 15-minute buckets (backfill.Options.Buckets, PerThread): every growth is
// the store's own count of the items of one bucket, under the counters'
// identity rules (an item counts once, its growth in its own bucket).
func (l *Ledger) AddThread(tg backfill.ThreadGrowth) {
	session := tg.ID
	if session == "" {
		session = strings.TrimSuffix(filepath.Base(tg.Path), ".json")
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, g := range tg.Growth {
		var u Usage
		f := store.UsageField(&g.Key, &u)
		if f == nil {
			continue
		}
		*f = g.V
		k := entryKey{g.At, session, g.Key.L1, g.Key.Repo}
		if r := l.rows[k]; r != nil {
			r.Add(u)
		} else {
			l.rows[k] = &u
		}
	}
}

// Add adds one entry (tests, and ledgers read back).
func (l *Ledger) Add(e Entry) {
	l.mu.Lock()
	defer l.mu.Unlock()
	k := entryKey{e.Start, e.Session, e.Model, e.Repo}
	if r := l.rows[k]; r != nil {
		r.Add(e.Usage)
	} else {
		u := e.Usage
		l.rows[k] = &u
	}
}

// rowCount is how many rows Add has made.
func (l *Ledger) rowCount() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.rows)
}

// AddSorted adds entries in the order of ledger.Compare, one per key (a
// store's Ledger), without looking each up: a ledger's rows of a year's
// thread files are kept as they are and merged with the others once, by
// Entries. It takes entries over.
func (l *Ledger) AddSorted(entries []Entry) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.sorted = mergeSorted(l.sorted, entries)
}

// Entries returns the ledger's rows, sorted by time, thread and model.
// The list may be the ledger's own (a year of rows is not copied for
// nothing): callers must not change it.
func (l *Ledger) Entries() []Entry {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.rows) == 0 {
		return slices.Clip(l.sorted)
	}
	out := make([]Entry, 0, len(l.rows))
	for k, u := range l.rows {
		out = append(out, Entry{Start: k.start, Session: k.session, Model: k.model, Repo: k.repo, Usage: *u})
	}
	slices.SortFunc(out, ledger.Compare)
	return mergeSorted(l.sorted, out)
}

// mergeSorted merges two lists of entries in the order of ledger.Compare,
// each with one entry per key, into one: the entries of a key in both
// added up.
func mergeSorted(a, b []Entry) []Entry {
	if len(b) == 0 {
		return slices.Clone(a)
	}
	if len(a) == 0 {
		return b
	}
	out := make([]Entry, 0, len(a)+len(b))
	for len(a) > 0 && len(b) > 0 {
		switch c := ledger.Compare(a[0], b[0]); {
		case c < 0:
			out, a = append(out, a[0]), a[1:]
		case c > 0:
			out, b = append(out, b[0]), b[1:]
		default:
			e := a[0]
			e.Add(b[0].Usage)
			out, a, b = append(out, e), a[1:], b[1:]
		}
	}
	return append(append(out, a...), b...)
}
