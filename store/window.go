package store

import (
	"cmp"
	"encoding/binary"
	"fmt"
	"slices"

	"github.com/amp-exporter/amp-exporter/parser/thread"
)

// Windows: a thread read from the Amp server grows at its end, and the
// server addresses messages by index, so a thread counted before can be
// read as a window, its messages from some index on, instead of whole. The
// store counts a window as it counts a whole snapshot (the same items, the
// same pins, the same max-merge), with what lies before the window added
// back as one fixed part, its prefix: the series its items gave when they
// left the window. That is exact while nothing before the window changes;
// the server's thread changes at its end (an answer streaming, a tool
// result filled in, a message cancelled), and an edit further back removes
// what follows it, which the window sees. Whatever a window cannot vouch
// for is refused (ErrWindowStale), and the caller reads the thread whole;
// a whole read also comes at every full sync.
//
// The window starts at a prompt: an exchange (identified by its prompt,
// timed to the last answer before the next prompt) and a tool result (named
// by its tool_use, in the same exchange) then lie wholly on one side.

// ErrWindowStale refuses a window the store cannot count exactly: the
// thread has no window, it starts elsewhere, an item it counted in the
// window is missing (a truncation), or an item before it is in it again.
// The thread must be read whole.
var ErrWindowStale = fmt.Errorf("store: the thread's window does not match what was counted; read it whole")

// Window is where a thread's next window starts, as the store remembers it.
type Window struct {
	// Start is the index (in the thread's whole messages) of the window's
	// first message, a prompt; Anchor is that message's key
	// (thread.MessageKey).
	Start  int
	Anchor uint64
	// Count is how many messages the thread had when it was counted.
	Count int
}

// windowRec is a thread's window, replaced and never changed in place
// (threadRecord's promise).
type windowRec struct {
	Window
	// region are the keys, sorted, of the items the window's messages gave
	// when it was last counted: each must be in the next window.
	region []uint64
	// prefix is what the items before the window count, and
	// prefixLedger what they give per bucket (ledger.go), sorted as a
	// thread's ledger.
	prefix       compactContribution
	prefixLedger threadLedger
}

// WindowState is the persisted form of a thread's window.
type WindowState struct {
	Start  int    `json:"start"`
	Anchor uint64 `json:"anchor,string"`
	Count  int    `json:"count"`
	// Region lists the window's item keys, ascending, as uvarint deltas.
	Region []byte        `json:"region"`
	Prefix []SeriesValue `json:"prefix,omitempty"`
	// Ledger is what the items before the window give per bucket, as the
	// thread's ledger rows (ledger.go).
	Ledger []LedgerRow `json:"ledger,omitempty"`
}

// NextWindow is the window a caller asks the store to keep after an apply:
// Sum holds the items of the thread's messages from Start on, read from the
// same document as the snapshot applied (a parse of that part alone).
type NextWindow struct {
	Window
	Sum *thread.Summary
}

// Window returns the window of the thread at path (a present file or
// server thread), if it has one.
func (s *ThreadStore) Window(path string) (Window, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	f := s.files[path]
	if f == nil {
		return Window{}, false
	}
	rec := s.threads[f.Key]
	if rec == nil || rec.more().win == nil {
		return Window{}, false
	}
	return rec.more().win.Window, true
}

// ApplyWindow applies a thread's window: sum holds the items of its
// messages from w.Start on (with its document's other parts: its id, agent
// mode), and the store adds back what it counted before the window. It
// refuses (ErrWindowStale) a window it cannot count exactly. next, when
// not nil, is the window to keep for the next read. A whole snapshot is
// applied with Apply, or with ApplyWindow and a zero w (Start 0): then
// next is kept too.
func (s *ThreadStore) ApplyWindow(path string, v FileVersion, sum *thread.Summary, w Window, next *NextWindow) (bool, error) {
	if !sum.ItemsValid() || next != nil && !next.Sum.ItemsValid() {
		return false, fmt.Errorf("store: a summary kept past its parser's next parse")
	}
	if !s.claimed(threadKey(path, sum)) {
		return false, nil
	}
	return s.apply(path, v, sum, &windowArgs{at: w, next: next})
}

// windowArgs are the window parts of an apply.
type windowArgs struct {
	at   Window
	next *NextWindow
}

// windowBase checks a window against the thread's record and returns the
// prefix to add to its snapshot. Callers hold the write lock.
func (s *ThreadStore) windowBase(rec *threadRecord, sum *thread.Summary, w Window) (compactContribution, error) {
	if w.Start == 0 {
		return nil, nil // a whole snapshot
	}
	win := rec.more().win
	if win == nil || win.Start != w.Start || win.Anchor != w.Anchor {
		return nil, ErrWindowStale
	}
	keys := make([]uint64, len(sum.Items))
	for i := range sum.Items {
		keys[i] = sum.Items[i].Key
	}
	slices.Sort(keys)
	// keys: the window's items, to find the region's in.
	// Every item the window had must be there (no truncation, no
	// cancelled message gone), and none of the thread's pinned items that
	// lies outside it (before it, or retired) may come back in it.
	for _, k := range win.region {
		if _, ok := slices.BinarySearch(keys, k); !ok {
			return nil, ErrWindowStale
		}
	}
	d := decodedPool.Get().(*decodedPins)
	defer decodedPool.Put(d)
	d.decode(rec.pins)
	outside := func(k uint64) bool {
		_, pinned := slices.BinarySearch(d.keys, k)
		_, inRegion := slices.BinarySearch(win.region, k)
		return pinned && !inRegion
	}
	for i := range sum.Items {
		// An item's alias (the key it had before its message got a
		// protocol id) pinned outside the window could be an item of its
		// own before it, which a whole snapshot would hold.
		if it := &sum.Items[i]; outside(it.Key) || it.Alias != 0 && outside(it.Alias) {
			return nil, ErrWindowStale
		}
	}
	return win.prefix, nil
}

// nextWindow works out the window to keep after an apply whose snapshot
// (with the prefix, without the retired part) is c: its prefix is c less
// what the next window's items count under the thread's pins as they are
// now. It returns nil when that cannot be exact (the next window's items
// are not all in the snapshot, or would pin something new), and the thread
// is then read whole next time. pins are the thread's pins after the
// apply. Callers hold the write lock.
func (s *ThreadStore) nextWindow(pins pinBlob, repo string, c contribution, led map[SeriesKey][]bucketValue, sum *thread.Summary, next *NextWindow) *windowRec {
	if next == nil || next.Start <= 0 {
		return nil
	}
	all := make(map[uint64]bool, len(sum.Items))
	for i := range sum.Items {
		all[sum.Items[i].Key] = true
	}
	region := make([]uint64, 0, len(next.Sum.Items))
	for i := range next.Sum.Items {
		it := &next.Sum.Items[i]
		if !all[it.Key] || it.HasCredits {
			// Credits are rounded per snapshot: a sum of two parts could
			// differ from the whole by a unit.
			return nil
		}
		region = append(region, it.Key)
	}
	slices.Sort(region)
	region = slices.Compact(region)
	res := s.contribute(next.Sum, s.prices, pins, true, true, repo)
	cn, pinned := res.series, res.pins
	if len(pinned) != len(pins) || len(pinned) > 0 && &pinned[0] != &pins[0] {
		return nil
	}
	prefix := contribution{}
	for k, v := range c {
		if d := v - cn[k]; d > 0 {
			prefix[k] = d
		} else if d < 0 {
			return nil
		}
	}
	for k, v := range cn {
		if v > 0 && c[k] == 0 {
			return nil
		}
	}
	return &windowRec{Window: next.Window, region: slices.Clip(region), prefix: s.series.compact(prefix),
		prefixLedger: s.prefixLedger(c, led, res.ledger)}
}

// windowStateOf is a window's persisted form.
func windowStateOf(keys []SeriesKey, w *windowRec) *WindowState {
	if w == nil {
		return nil
	}
	st := &WindowState{Start: w.Start, Anchor: w.Anchor, Count: w.Count}
	var prev uint64
	for _, k := range w.region {
		st.Region = binary.AppendUvarint(st.Region, k-prev)
		prev = k
	}
	for _, e := range w.prefix {
		k := keys[e.id]
		st.Prefix = append(st.Prefix, SeriesValue{Family: string(k.Fam), L1: k.L1, L2: k.L2, Value: e.v})
	}
	// Sorted, so that the saved state does not depend on the order the
	// store numbered its series in.
	slices.SortFunc(st.Prefix, func(a, b SeriesValue) int {
		return cmp.Or(cmp.Compare(a.Family, b.Family), cmp.Compare(a.L1, b.L1), cmp.Compare(a.L2, b.L2))
	})
	return st
}

// restoreWindow turns a persisted window into a record's; a damaged one
// is left out (the thread is read whole next time). Callers hold the write
// lock. repo is the thread's repository.
func (s *ThreadStore) restoreWindow(st *WindowState, repo string) *windowRec {
	if st == nil || st.Start <= 0 || st.Count < st.Start || checkSeries(st.Prefix, knownFamilies) != nil {
		return nil
	}
	var region []uint64
	var prev uint64
	for b := st.Region; len(b) > 0; {
		d, n := binary.Uvarint(b)
		if n <= 0 || len(region) > 0 && d == 0 || prev+d < prev {
			return nil
		}
		b = b[n:]
		prev += d
		region = append(region, prev)
	}
	// Dollars are never in a prefix (they follow token growth): a saved
	// one would raise the counter with nothing to show for it.
	prefix := slices.DeleteFunc(slices.Clone(st.Prefix), func(sv SeriesValue) bool {
		return Family(sv.Family) == FamCost || Family(sv.Family) == FamUnpriced
	})
	return &windowRec{Window: Window{Start: st.Start, Anchor: st.Anchor, Count: st.Count},
		region: region, prefix: s.series.compact(contributionIn(prefix, repo))}
}
