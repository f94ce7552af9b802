package collector

import (
	"cmp"
	"fmt"
	"slices"
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
	keys    []seriesKey // the store's numbered series when the delta was taken
	threads []deltaThread
	Files   map[string]*FileRecord
}

type deltaThread struct {
	key string
	rec threadRecord
}

// Empty reports whether nothing changed.
func (d *ThreadDelta) Empty() bool { return len(d.threads) == 0 && len(d.Files) == 0 }

// ThreadCount is the number of changed threads.
func (d *ThreadDelta) ThreadCount() int { return len(d.threads) }

// EachThread calls fn with the persisted form of every changed thread,
// built on the fly, and stops at the first error.
func (d *ThreadDelta) EachThread(fn func(key string, ts ThreadState) error) error {
	for _, t := range d.threads {
		if err := fn(t.key, threadStateOf(d.keys, t.rec)); err != nil {
			return err
		}
	}
	return nil
}

// ExportDelta returns what changed since the previous call and starts
// tracking afresh. The lock is held only to copy the changed records'
// headers. A caller that fails to save a delta gives it back with Requeue.
func (s *ThreadStore) ExportDelta() *ThreadDelta {
	s.mu.Lock()
	defer s.mu.Unlock()
	d := &ThreadDelta{
		keys:    s.series.keys, // append-only: the first len(keys) never change
		threads: make([]deltaThread, 0, len(s.changedThreads)),
		Files:   make(map[string]*FileRecord, len(s.changedFiles)),
	}
	for k := range s.changedThreads {
		if r := s.threads[k]; r != nil {
			d.threads = append(d.threads, deltaThread{k, *r})
		}
	}
	for p := range s.changedFiles {
		if f := s.files[p]; f != nil {
			c := *f
			d.Files[p] = &c
		} else {
			d.Files[p] = nil
		}
	}
	if len(s.changedThreads) > 0 {
		s.changedThreads = map[string]struct{}{}
	}
	if len(s.changedFiles) > 0 {
		s.changedFiles = map[string]struct{}{}
	}
	return d
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
func threadStateOf(keys []seriesKey, rec threadRecord) ThreadState {
	series := make(SeriesList, 0, len(rec.contrib))
	for _, e := range rec.contrib {
		k := keys[e.id]
		series = append(series, SeriesValue{Family: string(k.fam), L1: k.l1, L2: k.l2, Value: e.v})
	}
	slices.SortFunc(series, func(a, b SeriesValue) int {
		return cmp.Or(cmp.Compare(a.Family, b.Family), cmp.Compare(a.L1, b.L1), cmp.Compare(a.L2, b.L2))
	})
	return ThreadState{LastActivity: rec.lastActivity, Series: series}
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
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.threads[key]; ok {
		return dropped, fmt.Errorf("thread %q restored twice", key)
	}
	c := make(compactContribution, 0, len(kept))
	for _, sv := range kept {
		k := seriesKey{family(sv.Family), sv.L1, sv.L2}
		s.totals[k] = satAdd(s.totals[k], sv.Value)
		c = append(c, seriesValue{s.series.id(k), sv.Value})
	}
	slices.SortFunc(c, func(a, b seriesValue) int { return cmp.Compare(a.id, b.id) })
	// A series listed twice (never written so, but cheap to be sure of)
	// is one series holding the sum.
	out := c[:0]
	for _, e := range c {
		if n := len(out); n > 0 && out[n-1].id == e.id {
			out[n-1].v = satAdd(out[n-1].v, e.v)
			continue
		}
		out = append(out, e)
	}
	s.threads[key] = &threadRecord{contrib: slices.Clip(out), lastActivity: ts.LastActivity}
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
	s.files[path] = &f
	return nil
}

// knownSeries returns the series of known families, and how many it left
// out.
func knownSeries(series []SeriesValue, known map[family]bool) ([]SeriesValue, int) {
	kept := series[:0:0]
	for _, sv := range series {
		if known[family(sv.Family)] {
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
