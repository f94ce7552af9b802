package state

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/amp-exporter/amp-exporter/internal/testsupport/threadgen"
	"github.com/amp-exporter/amp-exporter/parser/streamjson"
	"github.com/amp-exporter/amp-exporter/parser/thread"
	"github.com/amp-exporter/amp-exporter/store"
)

// logLayout is where the fields of a state log file are: its batches and
// their records (format 1 or 2), so a test can damage a chosen field.
type logLayout struct {
	lenOff, crcOff int64 // of a batch's length and checksum, from its start
	batches        []batchLayout
}

type batchLayout struct {
	off, payload, end int64
	recs              []recLayout
}

type recLayout struct {
	key                                 string
	off, keyOff, valLenOff, valOff, end int64
}

func layoutOf(t *testing.T, b []byte) logLayout {
	t.Helper()
	v := binary.LittleEndian.Uint32(b[8:12])
	head, trailer := int64(16), int64(4)
	l := logLayout{lenOff: 4, crcOff: 8}
	if v == 1 {
		head, trailer, l.lenOff, l.crcOff = 8, 0, 0, 4
	}
	for off := int64(16); off < int64(len(b)); {
		n := int64(binary.LittleEndian.Uint32(b[off+l.lenOff:]))
		bl := batchLayout{off: off, payload: off + head, end: off + head + n}
		for p := bl.payload; p < bl.end; {
			kl, a := binary.Uvarint(b[p:])
			r := recLayout{off: p, keyOff: p + int64(a)}
			r.key = string(b[r.keyOff : r.keyOff+int64(kl)])
			r.valLenOff = r.keyOff + int64(kl)
			vl, c := binary.Uvarint(b[r.valLenOff:])
			r.valOff = r.valLenOff + int64(c)
			r.end = r.valOff + trailer
			if vl > 0 {
				r.end += int64(vl - 1)
			}
			bl.recs = append(bl.recs, r)
			p = r.end
		}
		l.batches = append(l.batches, bl)
		off = bl.end
	}
	return l
}

// find returns the batch and record of the live (last) record of key.
func (l logLayout) find(t *testing.T, key string) (batchLayout, recLayout) {
	t.Helper()
	for i := len(l.batches) - 1; i >= 0; i-- {
		for j := len(l.batches[i].recs) - 1; j >= 0; j-- {
			if r := l.batches[i].recs[j]; r.key == key {
				return l.batches[i], r
			}
		}
	}
	t.Fatalf("no record %q", key)
	return batchLayout{}, recLayout{}
}

// damageScenario is the run of the issue that found the damage: 60
// threads, 29 of them deleted since, two stream-json ingests, saved in
// several commits.
type damageScenario struct {
	ids      []string // thread ids by index
	paths    []string
	versions []store.FileVersion
	sums     []*thread.Summary
	deleted  map[int]bool
	ingest   []streamjson.Increments
	log      []byte
}

func ingestRun(i int) []streamjson.Increments {
	return []streamjson.Increments{
		{UserMessages: 1, Prompts: 1},
		{AssistantMessages: 1, Model: "claude-sonnet-4-5", StopReason: "end_turn", Tokens: &streamjson.Usage{Input: 100 * int64(i+1), Output: 6500}},
		{Executions: []streamjson.Execution{{Outcome: streamjson.OutcomeSuccess, Seconds: 3, HasDuration: true, Turns: 2, HasTurns: true}}},
	}
}

func newDamageScenario(t *testing.T) *damageScenario {
	t.Helper()
	gen := threadgen.New(threadgen.Options{Threads: 60, TotalBytes: 60 * 20_000, Seed: 19})
	sc := &damageScenario{deleted: map[int]bool{}}
	for i := range 60 {
		name, data := gen.Thread(i)
		// A parser of its own per thread: the summaries are applied again
		// after the restart, and a summary is valid only until its
		// parser's next parse.
		th, err := thread.NewParser().ParseBytes(data)
		if err != nil {
			t.Fatal(err)
		}
		sum := thread.Summarize(th)
		sc.ids = append(sc.ids, sum.ID)
		sc.paths = append(sc.paths, "/threads/"+name)
		sc.versions = append(sc.versions, store.FileVersion{Size: int64(len(data)), ModNanos: int64(i)})
		sc.sums = append(sc.sums, sum)
	}
	dir := t.TempDir()
	s := newTestState(dir)
	// A fixed clock: the log is then the same bytes in every run.
	s.keeper.now = func() time.Time { return time.Date(2026, 12, 1, 8, 0, 0, 0, time.UTC) }
	mustRestore(t, s) // the first commit: meta (and the empty stores)
	save := func() {
		t.Helper()
		if err := s.keeper.save(); err != nil {
			t.Fatal(err)
		}
	}
	apply := func(from, to int) {
		for i := from; i < to; i++ {
			s.stores.Threads.Apply(sc.paths[i], sc.versions[i], sc.sums[i])
		}
	}
	remove := func(from, to int) {
		for i := from; i < to; i++ {
			s.stores.Threads.Remove(sc.paths[i])
			sc.deleted[i] = true
		}
	}
	ingest := func(i int) {
		s.stores.Streams.Apply(ingestRun(i))
		sc.ingest = append(sc.ingest, ingestRun(i)...)
	}
	apply(0, 40)
	save()
	remove(0, 20)
	save()
	ingest(0)
	save()
	apply(40, 60)
	save()
	remove(20, 29)
	save()
	ingest(1)
	save()
	// The last commit: one present thread's file seen again, changed.
	sc.versions[59].ModNanos = 1059
	s.stores.Threads.Apply(sc.paths[59], sc.versions[59], sc.sums[59])
	save()
	s.keeper.close()
	var err error
	if sc.log, err = os.ReadFile(filepath.Join(dir, LogName)); err != nil {
		t.Fatal(err)
	}
	return sc
}

// expected is what a store holds after a restart that lost the given
// threads' records and kept the first ingests stream ingests: every
// present thread is read again from its file.
func (sc *damageScenario) expected(lost map[string]bool, ingests int) (threads, streams map[store.SeriesKey]int64) {
	ref := newTestState("")
	for i := range sc.ids {
		if lost[sc.ids[i]] && sc.deleted[i] {
			continue
		}
		ref.stores.Threads.Apply(sc.paths[i], sc.versions[i], sc.sums[i])
		if sc.deleted[i] {
			ref.stores.Threads.Remove(sc.paths[i])
		}
	}
	ref.stores.Streams.Apply(sc.ingest[:3*ingests])
	return ref.stores.Threads.Snapshot().Totals(), ref.stores.Streams.Snapshot().Totals()
}

// restart restores a copy of the log and reads every present thread file
// again, as the watcher's first scan does (a file whose saved version is
// its current one is not read again).
func (sc *damageScenario) restart(t *testing.T, log []byte) *testState {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, LogName), log, 0o644); err != nil {
		t.Fatal(err)
	}
	s := newTestState(dir)
	mustRestore(t, s)
	for i := range sc.ids {
		if sc.deleted[i] {
			continue
		}
		if f, ok := s.stores.Threads.File(sc.paths[i]); ok && f.Version == sc.versions[i] {
			continue
		}
		s.stores.Threads.Apply(sc.paths[i], sc.versions[i], sc.sums[i])
	}
	return s
}

func threadKeyOf(id string) string { return keyThreadPrefix + id }

// TestStateDamageCostsOnlyWhatItHits flips one bit in each kind of field
// of a state log — a record's key, value and lengths, the meta record, a
// batch's length, checksum and marker, the last batch — and restarts. Each
// row says which records are lost (the deleted threads whose only copy
// they were; present threads are read again from their files) and how
// many stream-json ingests survive; every other counter must come back
// equal and none above what it was before, the damage must be counted as
// a load error unless it is the torn tail a crash leaves, and a copy of
// the damaged file is kept. A hit length costs its record only (the
// reader finds the next record by its checksum), and the log is the same
// bytes in every run (TestStateSaveOrderIsDeterministic), so each row
// loses the same records every time.
func TestStateDamageCostsOnlyWhatItHits(t *testing.T) {
	sc := newDamageScenario(t)
	l := layoutOf(t, sc.log)
	before, _ := sc.expected(nil, 2) // the totals when the log was written
	deletedKey := func(i int) string { return threadKeyOf(sc.ids[i]) }
	// The batch that holds deleted thread 5's record (the "batch 1").
	b1, _ := l.find(t, deletedKey(5))
	one := func(i int) func() map[string]bool {
		return func() map[string]bool { return map[string]bool{sc.ids[i]: true} }
	}
	none := func() map[string]bool { return nil }
	_, meta := l.find(t, keyMeta)
	_, t5 := l.find(t, deletedKey(5))
	_, t7 := l.find(t, deletedKey(7))
	_, t12 := l.find(t, deletedKey(12))
	_, t25 := l.find(t, deletedKey(25))
	_, t35 := l.find(t, threadKeyOf(sc.ids[35])) // a present thread's
	if t12.valOff-t12.valLenOff < 2 {
		t.Fatal("thread 12's value length is one byte: the row of its high byte would hit its value")
	}
	_, stream := l.find(t, keyStream)
	last := l.batches[len(l.batches)-1]
	var streamOld recLayout // the first ingest's stream record, superseded
	for _, b := range l.batches {
		for _, r := range b.recs {
			if r.key == keyStream && r.off < stream.off && streamOld.key == "" && r.end-r.valOff > 100 {
				streamOld = r
			}
		}
	}
	// Rows whose damage hits a record's length (the thread it hits): what
	// they lose is the rest of the batch at most (see below).
	resyncs := map[string]int{"value length of a record": 12, "key length of a record": 5}
	for _, tc := range []struct {
		name    string
		at      int64 // the byte whose bit 0x10 is flipped
		lost    func() map[string]bool
		ingests int
		// loadError: the damage is counted and logged as an error, and a
		// copy is set aside; else it is a torn tail (or harmless).
		loadError bool
	}{
		// The three cases of issue 19, reproduced on the format before it.
		{"meta record value, first batch", meta.valOff + 2, none, 2, true},
		{"value of a record in batch 1", t5.valOff + 40, one(5), 2, true},
		{"length field of batch 1", b1.off + l.lenOff, none, 2, true},
		// Every kind of field, at several offsets.
		{"meta record key", meta.keyOff + 1, none, 2, true},
		{"checksum field of batch 1", b1.off + l.crcOff + 2, none, 2, true},
		{"first byte of batch 1", b1.off, none, 2, true},
		{"high byte of batch 1's length", b1.off + l.lenOff + 3, none, 2, true},
		{"key of a record in batch 1", t7.keyOff + 3, one(7), 2, true},
		{"end of a record's value", t12.end - 5, one(12), 2, true},
		{"value length of a record", t12.valLenOff, one(12), 2, true},
		{"key length of a record", t5.off, one(5), 2, true},
		{"high byte of a record's value length", t12.valLenOff + 1, one(12), 2, true},
		{"value length of a present thread's record", t35.valLenOff, none, 2, true},
		{"record of a thread deleted later", t25.valOff + 7, one(25), 2, true},
		{"live stream record", stream.valOff + 20, none, 1, true},
		{"superseded stream record", streamOld.valOff + 20, none, 2, true},
		{"payload of the last batch (torn tail)", last.payload + 3, none, 2, false},
		{"length of the last batch (torn tail)", last.off + l.lenOff, none, 2, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.at <= 16 || tc.at >= int64(len(sc.log)) {
				t.Fatalf("offset %d outside the log", tc.at)
			}
			damaged := slices.Clone(sc.log)
			damaged[tc.at] ^= 0x10
			s := sc.restart(t, damaged)
			lost := tc.lost()
			if hit, ok := resyncs[tc.name]; ok {
				// A hit length makes the reader walk the rest of the
				// batch from a wrong place: it may fall on a later
				// record's start again (where depends on the order the
				// save wrote the batch's records in, which varies) and
				// keep what follows, each record under its own checksum.
				// So the rest of the batch is what it may lose; the
				// counters must be exact for what it kept.
				kept := map[string]bool{}
				for _, k := range s.stores.Threads.ThreadKeys() {
					kept[k] = true
				}
				if kept[sc.ids[hit]] {
					t.Errorf("the record whose length was hit (thread %d) was kept", hit)
				}
				for id := range lost {
					if kept[id] {
						delete(lost, id)
					}
				}
			}
			wantThreads, wantStreams := sc.expected(lost, tc.ingests)
			gotThreads, gotStreams := s.stores.Threads.Snapshot().Totals(), s.stores.Streams.Snapshot().Totals()
			// Damage may lose counts, never add any.
			for k, g := range gotThreads {
				if b := before[k]; g > b {
					t.Errorf("%v: %d after the restart, %d before: counted twice", k, g, b)
				}
			}
			if !maps.Equal(gotThreads, wantThreads) {
				t.Errorf("thread counters after the restart differ:\n%s", totalsDiff(wantThreads, gotThreads))
			}
			if !maps.Equal(gotStreams, wantStreams) {
				t.Errorf("stream counters after the restart differ:\n%s", totalsDiff(wantStreams, gotStreams))
			}
			loadErrs := s.loadErrors(t)
			asides, _ := filepath.Glob(filepath.Join(s.keeper.dir, LogName+".damaged-*"))
			if tc.loadError {
				if loadErrs == 0 {
					t.Error("damage not counted in amp_exporter_state_errors_total{operation=\"load\"}")
				}
				if len(asides) != 1 {
					t.Errorf("set-aside copies %v, want one", asides)
				} else if kept, _ := os.ReadFile(asides[0]); string(kept) != string(damaged) {
					t.Error("the set-aside copy is not the damaged file as found")
				}
			} else if loadErrs != 0 || len(asides) != 0 {
				t.Errorf("a torn tail counted as damage (%g) or set aside (%v)", loadErrs, asides)
			}
		})
	}
}

func totalsDiff(want, got map[store.SeriesKey]int64) string {
	var b strings.Builder
	for k, w := range want {
		if g := got[k]; g != w {
			fmt.Fprintf(&b, "  %v: got %d, want %d\n", k, g, w)
		}
	}
	for k, g := range got {
		if _, ok := want[k]; !ok {
			fmt.Fprintf(&b, "  %v: got %d, want none\n", k, g)
		}
	}
	return b.String()
}

// TestStateSaveOrderIsDeterministic: the same changes saved in the same
// commits give the same log, byte for byte, so which records a damaged
// stretch hits (and so what a damage test expects to lose) does not
// depend on the run.
func TestStateSaveOrderIsDeterministic(t *testing.T) {
	first := newDamageScenario(t).log
	for range 3 {
		if again := newDamageScenario(t).log; !bytes.Equal(again, first) {
			l1, l2 := layoutOf(t, first), layoutOf(t, again)
			for i := range min(len(l1.batches), len(l2.batches)) {
				for j := range min(len(l1.batches[i].recs), len(l2.batches[i].recs)) {
					if a, b := l1.batches[i].recs[j].key, l2.batches[i].recs[j].key; a != b {
						t.Fatalf("batch %d record %d: %s in one run, %s in another", i, j, a, b)
					}
				}
			}
			t.Fatal("two runs saved different logs")
		}
	}
}
