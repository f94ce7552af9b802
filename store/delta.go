package store

import (
	"cmp"
	"fmt"
	"maps"
	"slices"

	"github.com/amp-exporter/amp-exporter/internal/sat"
)

// Incremental persistence: a save writes what changed since the last one,
// one record per thread and per file, rather than the whole state.

// ThreadDelta is what changed in a ThreadStore since the previous
// ExportDelta: the changed threads (their persisted form is built one at a
// time by EachThread, after the store's lock is released) and each changed
// file's record (nil for a file that is gone).
//
// A file's record is only ever in a delta together with, or after, the
// thread contribution it was counted into, so a state that has the file's
// version also has what that version added.
type ThreadDelta struct {
	keys    []SeriesKey // the store's numbered series when the delta was taken
	tuples  *tupleTable // the store's pin tuples (safe to read without the store's lock)
	threads []deltaThread
	Files   map[string]*FileRecord // FilePaths gives its keys in order
}

// FilePaths returns the paths of Files, sorted: the order a save writes
// them in, the same in every run.
func (d *ThreadDelta) FilePaths() []string { return slices.Sorted(maps.Keys(d.Files)) }

type deltaThread struct {
	key string
	rec threadRecord
}

// Empty reports whether nothing changed.
func (d *ThreadDelta) Empty() bool { return len(d.threads) == 0 && len(d.Files) == 0 }

// ThreadCount is the number of changed threads.
func (d *ThreadDelta) ThreadCount() int { return len(d.threads) }

// EachThread calls fn with the persisted form of every changed thread,
// built on the fly, and stops at the first error. The order is the same
// for the same changes: the threads of changed files by path, then the
// others by key (a thread in the delta twice comes later the second time).
func (d *ThreadDelta) EachThread(fn func(key string, ts ThreadState) error) error {
	for _, t := range d.threads {
		ts := threadStateOf(d.keys, t.rec)
		ts.Pins, ts.Retired = identityStateOf(d.keys, d.tuples, &t.rec)
		if err := fn(t.key, ts); err != nil {
			return err
		}
	}
	return nil
}

// exportChunk bounds how many records ExportDelta copies per hold of
// the lock, so that a save after a scan of tens of thousands of threads
// never makes a scrape or a parsing worker wait for long.
const exportChunk = 1000

// ExportDelta returns what changed since the previous call and starts
// tracking afresh. The lock is held only to copy record headers, a chunk
// at a time. A file's record is copied in the same hold as its thread's,
// so the delta never holds a file version newer than the contribution it
// holds for it; whatever changes meanwhile is tracked for the next delta
// (a thread may then be in this one twice: the later copy is the newer).
// A caller that fails to save a delta gives it back with Requeue.
func (s *ThreadStore) ExportDelta() *ThreadDelta {
	s.mu.Lock()
	threads, files := s.changedThreads, s.changedFiles
	if len(threads) > 0 {
		s.changedThreads = map[string]struct{}{}
	} else {
		threads = nil // the store's own (empty) set stays the store's
	}
	if len(files) > 0 {
		s.changedFiles = map[string]struct{}{}
	} else {
		files = nil
	}
	keys := s.series.keys
	s.mu.Unlock()

	type fileRef struct {
		path string
		rec  *FileRecord
	}
	d := &ThreadDelta{tuples: &s.tuples, threads: make([]deltaThread, 0, len(threads)), Files: make(map[string]*FileRecord, len(files))}
	// Sorted, so that the same changes are saved in the same order in
	// every run: what a damaged stretch of the log costs is then the
	// same records every time.
	paths := slices.Sorted(maps.Keys(files))
	refs := make([]fileRef, 0, len(paths))
	for len(paths) > 0 {
		n := min(len(paths), exportChunk)
		s.mu.Lock()
		for _, p := range paths[:n] {
			// A file's record is replaced, never changed in place, so
			// the delta can share it.
			f := s.files[p]
			refs = append(refs, fileRef{p, f})
			if f == nil {
				continue
			}
			if r := s.threads[f.Key]; r != nil {
				d.threads = append(d.threads, deltaThread{f.Key, *r})
			}
		}
		keys = s.series.keys // append-only: the first len(keys) never change
		s.mu.Unlock()
		s.betweenHolds()
		paths = paths[n:]
	}
	for _, r := range refs {
		d.Files[r.path] = r.rec
		if r.rec != nil {
			delete(threads, r.rec.Key)
		}
	}
	rest := slices.Sorted(maps.Keys(threads))
	for len(rest) > 0 {
		n := min(len(rest), exportChunk)
		s.mu.Lock()
		for _, k := range rest[:n] {
			if r := s.threads[k]; r != nil {
				d.threads = append(d.threads, deltaThread{k, *r})
			}
		}
		keys = s.series.keys
		s.mu.Unlock()
		s.betweenHolds()
		rest = rest[n:]
	}
	d.keys = keys
	return d
}

// betweenHolds runs the test hook called each time ExportDelta releases
// the lock between two chunks.
func (s *ThreadStore) betweenHolds() {
	if s.exportHook != nil {
		s.exportHook()
	}
}

// Requeue marks what a delta held as changed again, for a save that
// failed: the next delta holds it (as it is then).
func (s *ThreadStore) Requeue(d *ThreadDelta) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, t := range d.threads {
		s.changedThreads[t.key] = struct{}{}
	}
	for p := range d.Files {
		s.changedFiles[p] = struct{}{}
	}
}

// threadStateOf is a thread record's persisted form; keys are the store's
// numbered series (at least those the record uses).
func threadStateOf(keys []SeriesKey, rec threadRecord) ThreadState {
	series := make(SeriesList, 0, len(rec.contrib))
	for _, e := range rec.contrib {
		k := keys[e.id]
		series = append(series, SeriesValue{Family: string(k.Fam), L1: k.L1, L2: k.L2, Value: e.v})
	}
	slices.SortFunc(series, func(a, b SeriesValue) int {
		return cmp.Or(cmp.Compare(a.Family, b.Family), cmp.Compare(a.L1, b.L1), cmp.Compare(a.L2, b.L2))
	})
	more := rec.more()
	win := windowStateOf(keys, more.win)
	if win != nil {
		win.Ledger = ledgerStateOf(keys, series, more.win.prefixLedger)
	}
	return ThreadState{LastActivity: rec.lastActivity, Series: series, Window: win, BilledAt: more.billedAt,
		Repository: rec.repo, Ledger: ledgerStateOf(keys, series, rec.ledger), LedgerRetired: ledgerStateOf(keys, series, more.ledgerRetired),
		LedgerCoarse: coarseStateOf(more.ledgerCoarse), DayBills: more.days}
}

// ImportThread restores one thread's persisted contribution into a store
// being restored. Series of families this version does not know (written
// by a newer one) are left out and counted in dropped: the state is read
// as far as it is known. A negative value is an error, and nothing of the
// thread is taken.
func (s *ThreadStore) ImportThread(key string, ts ThreadState) (dropped int, err error) {
	kept, dropped := knownSeries(ts.Series, knownFamilies)
	for _, sv := range kept {
		if sv.Value < 0 {
			return dropped, fmt.Errorf("thread %q: invalid value %v in %q", key, sv.Value, sv.Family)
		}
	}
	// Pins and the retired part that do not check out are left out: the
	// thread is then pinned afresh from its next snapshot (as a state
	// written before pins were kept).
	identityOK := checkPins(ts.Pins) == nil && checkSeries(ts.Retired, knownFamilies) == nil
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.threads[key]; ok {
		return dropped, fmt.Errorf("thread %q restored twice", key)
	}
	// The thread stays under the repository it was counted under: a state
	// written before the label puts it under none.
	repo := restoredLabel(ts.Repository)
	c := make(compactContribution, 0, len(kept))
	for _, sv := range kept {
		k := sv.keyIn(repo)
		s.totals[k] = sat.Add(s.totals[k], sv.Value)
		c = append(c, seriesValue{s.series.id(k), sv.Value})
	}
	slices.SortFunc(c, func(a, b seriesValue) int { return cmp.Compare(a.id, b.id) })
	// A series listed twice (never written so, but cheap to be sure of)
	// is one series holding the sum.
	out := c[:0]
	for _, e := range c {
		if n := len(out); n > 0 && out[n-1].id == e.id {
			out[n-1].v = sat.Add(out[n-1].v, e.v)
			continue
		}
		out = append(out, e)
	}
	rec := &threadRecord{contrib: slices.Clip(out), lastActivity: ts.LastActivity, repo: repo, repoSet: true}
	rec.setMore(threadExtra{billedAt: ts.BilledAt, days: dayBillsOf(ts.DayBills)})
	if identityOK {
		s.restoreIdentity(rec, ts)
		rec.change(func(x *threadExtra) { x.win = s.restoreWindow(ts.Window, repo) })
	}
	if s.restoreLedger(rec, ts, repo, identityOK) {
		s.ledgerRepairs++
	}
	s.threads[key] = rec
	s.lastActivity = max(s.lastActivity, ts.LastActivity)
	return dropped, nil
}

// ImportFile restores a present file's record; its thread must have been
// restored first (a file whose thread is unknown is refused, and is then
// simply read again).
func (s *ThreadStore) ImportFile(path string, f FileRecord) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.threads[f.Key]; !ok {
		return fmt.Errorf("file %q refers to unknown thread %q", path, f.Key)
	}
	s.fileThreadsKeyLocked(&f)
	s.files[path] = &f
	return nil
}

// knownSeries returns the series of known families, and how many it left
// out.
func knownSeries(series []SeriesValue, known map[Family]bool) ([]SeriesValue, int) {
	kept := series[:0:0]
	for _, sv := range series {
		if known[Family(sv.Family)] {
			kept = append(kept, sv)
		}
	}
	return kept, len(series) - len(kept)
}

// KeepKnown leaves out the series of families this version does not know
// (a state written by a newer one) and returns how many it left out.
func (st *StreamState) KeepKnown() int {
	var n int
	st.Series, n = knownSeries(st.Series, streamFamilies)
	return n
}

// KeepKnown leaves out the series of families this version does not know
// (a state written by a newer one) and returns how many it left out.
func (st *AmyState) KeepKnown() int {
	total := 0
	for name, series := range st.Upstreams {
		kept, n := knownSeries(series, amyFamilies)
		st.Upstreams[name] = kept
		total += n
	}
	return total
}

// ExportAdmitted returns the label values admitted so far, per label, for
// persistence.
func (c *LabelCap) ExportAdmitted() map[string][]string { return c.export() }

// ImportAdmitted restores persisted admissions (past the cap too).
func (c *LabelCap) ImportAdmitted(admitted map[string][]string) { c.restore(admitted) }
