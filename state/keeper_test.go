package state

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/amp-exporter/amp-exporter/collector"
	"github.com/amp-exporter/amp-exporter/internal/testsupport/testsize"
	"github.com/amp-exporter/amp-exporter/internal/testsupport/threadgen"
	"github.com/amp-exporter/amp-exporter/internal/testsupport/threadtest"
	"github.com/amp-exporter/amp-exporter/parser/thread"
	"github.com/amp-exporter/amp-exporter/state/statelog"
	"github.com/amp-exporter/amp-exporter/store"
)

type testState struct {
	stores  Stores
	metrics *collector.ExporterMetrics
	reg     *prometheus.Registry
	keeper  *Keeper
}

func newTestState(dir string) *testState {
	reg := prometheus.NewRegistry()
	m := collector.NewExporterMetrics(reg)
	labels := store.NewLabelCap(100, nil)
	st := &testState{
		stores: Stores{
			Threads: store.NewThreadStore(store.StoreOptions{Labels: labels}),
			Streams: store.NewStreamStore(labels, nil),
			Amy:     store.NewAmyStore(labels, nil),
			Labels:  labels,
		},
		metrics: m, reg: reg,
	}
	st.keeper = newKeeper(Options{Dir: dir, Stores: st.stores, Metrics: m, Logger: slog.New(slog.DiscardHandler)})
	return st
}

// applyThreads parses n generated threads into the store.
func (s *testState) applyThreads(t *testing.T, gen *threadgen.Generator, from, to int) {
	t.Helper()
	p := thread.NewParser()
	for i := from; i < to; i++ {
		name, data := gen.Thread(i)
		th, err := p.ParseBytes(data)
		if err != nil {
			t.Fatal(err)
		}
		s.stores.Threads.Apply("/threads/"+name, store.FileVersion{Size: int64(len(data)), ModNanos: int64(i)}, thread.Summarize(th))
	}
}

// fingerprint is the whole state, deterministically encoded.
func (s *testState) fingerprint(t *testing.T) string {
	t.Helper()
	th, _ := json.Marshal(s.stores.Threads.Export())
	st, _ := json.Marshal(s.stores.Streams.Export())
	amy, _ := json.Marshal(s.stores.Amy.Export())
	return string(th) + "\n" + string(st) + "\n" + string(amy)
}

func (s *testState) loadErrors(t *testing.T) float64 {
	t.Helper()
	mfs, err := s.reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != "amp_exporter_state_errors_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "operation" && l.GetValue() == "load" {
					return m.GetCounter().GetValue()
				}
			}
		}
	}
	return 0
}

func mustRestore(t testing.TB, s *testState) {
	t.Helper()
	if err := s.keeper.restore(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.keeper.close() })
}

func TestStateSurvivesRestartsIncrementally(t *testing.T) {
	dir := t.TempDir()
	gen := threadgen.New(threadgen.Options{Threads: 60, TotalBytes: 60 * 20_000, Seed: 3})
	a := newTestState(dir)
	mustRestore(t, a)
	a.applyThreads(t, gen, 0, 50)
	if err := a.keeper.save(); err != nil {
		t.Fatal(err)
	}
	full := a.keeper.written
	// One thread more: the save costs about one thread, not the state.
	a.applyThreads(t, gen, 50, 51)
	a.stores.Threads.Remove("/threads/" + func() string { n, _ := gen.Thread(3); return n }())
	if err := a.keeper.save(); err != nil {
		t.Fatal(err)
	}
	if one := a.keeper.written - full; one <= 0 || one*10 > full {
		t.Errorf("the first save wrote %d bytes, one more thread %d", full, one)
	}
	// Nothing changed: nothing written.
	before := a.keeper.written
	if err := a.keeper.save(); err != nil || a.keeper.written != before {
		t.Fatalf("an idle save wrote %d bytes (%v)", a.keeper.written-before, err)
	}
	a.keeper.close()

	b := newTestState(dir)
	mustRestore(t, b)
	if a.fingerprint(t) != b.fingerprint(t) {
		t.Fatal("the restored state differs from the saved one")
	}
	if d := b.stores.Threads.ExportDelta(); !d.Empty() {
		t.Errorf("a restore left %d threads and %d files to save again", d.ThreadCount(), len(d.Files))
	}
}

// A first save cut short (the log has records but no meta record, which
// the first commit writes last) is started over: its records are not used.
func TestUnfinishedFirstSaveStartsOver(t *testing.T) {
	dir := t.TempDir()
	l, _, err := statelog.Open(filepath.Join(dir, LogName), testNow)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.Commit([]statelog.Record{{Key: keyThreadPrefix + "T-partial", Value: []byte(`{"series":[{"f":"tokens","a":"m","b":"output","v":999}]}`)}}); err != nil {
		t.Fatal(err)
	}
	l.Close()
	a := newTestState(dir)
	mustRestore(t, a)
	if a.fingerprint(t) != newTestState(t.TempDir()).fingerprint(t) {
		t.Fatal("an unfinished first save's partial log was used")
	}
	if a.keeper.db.Has(keyThreadPrefix + "T-partial") {
		t.Fatal("an unfinished first save's records were kept in the log")
	}
}

func TestNewerStateIsRefusedClearly(t *testing.T) {
	t.Run("log with a higher state version", func(t *testing.T) {
		dir := t.TempDir()
		l, _, err := statelog.Open(filepath.Join(dir, LogName), testNow)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := l.Commit([]statelog.Record{{Key: keyMeta, Value: []byte(`{"version": 9}`)}}); err != nil {
			t.Fatal(err)
		}
		l.Close()
		err = newTestState(dir).keeper.restore()
		if !errors.Is(err, ErrNewer) {
			t.Fatalf("err = %v, want ErrNewer", err)
		}
	})
	t.Run("unknown fields, records and families are read as far as known", func(t *testing.T) {
		dir := t.TempDir()
		l, _, err := statelog.Open(filepath.Join(dir, LogName), testNow)
		if err != nil {
			t.Fatal(err)
		}
		recs := []statelog.Record{
			{Key: keyThreadPrefix + "T-1", Value: []byte(`{"series":[{"f":"tokens","a":"m","b":"output","v":7},{"f":"new_family","v":1}],"pinned":{"x":1}}`)},
			{Key: keyFilePrefix + "/threads/T-1.json", Value: []byte(`{"key":"T-1","agent_mode":"smart","version":{"size":1},"v":3}`)},
			{Key: "server:x", Value: []byte(`{}`)},
			{Key: keyMeta, Value: []byte(`{"version": 1, "writer": "later"}`)},
		}
		if _, err := l.Commit(recs); err != nil {
			t.Fatal(err)
		}
		l.Close()
		s := newTestState(dir)
		mustRestore(t, s)
		if _, ok := s.stores.Threads.File("/threads/T-1.json"); !ok {
			t.Error("file record not restored")
		}
		if !strings.Contains(s.fingerprint(t), `["tokens","m","output",7]`) {
			t.Error("known series not restored")
		}
		if n := s.loadErrors(t); n != 0 {
			t.Errorf("newer data counted as damage (%g)", n)
		}
		if !s.keeper.db.Has("server:x") {
			t.Error("a newer version's record was dropped")
		}
	})
}

var testNow = time.Date(2026, 12, 1, 8, 0, 0, 0, time.UTC)

// A save too large for one batch, cut off by a crash after any of its
// batches, restores consistently: every file that is back has, in its
// thread, at least what its version added, and nothing reads as damaged.
func TestSaveCutAfterAnyBatchRestoresConsistently(t *testing.T) {
	dir := t.TempDir()
	s := newTestState(dir)
	mustRestore(t, s)
	const threads = 400 // ~2.5 kB of records each: a save of a third spans several batches
	apply := func(i, round int) {
		tokens := map[string]thread.Tokens{}
		for m := range 16 {
			tokens[fmt.Sprintf("model-%d", m)] = thread.Tokens{Input: int64(round), Output: int64(round) * 100, CacheRead: 1, CacheCreation: 1}
		}
		sum := threadtest.Summary(threadtest.Thread{ID: fmt.Sprintf("T-%04d-%s", i, strings.Repeat("x", 200)), Tokens: tokens})
		s.stores.Threads.Apply(fmt.Sprintf("/threads/%04d.json", i), store.FileVersion{Size: int64(round)}, sum)
	}
	for i := range threads {
		apply(i, 1)
	}
	if err := s.keeper.save(); err != nil {
		t.Fatal(err)
	}
	before := s.keeper.db.Size()
	// A third of them again: a save of several batches that leaves the
	// log short of a compaction (which would rewrite it whole).
	for i := range threads / 3 {
		apply(i, 2)
	}
	if err := s.keeper.save(); err != nil {
		t.Fatal(err)
	}
	s.keeper.close()
	full, err := os.ReadFile(filepath.Join(dir, LogName))
	if err != nil {
		t.Fatal(err)
	}
	var cuts []int64
	for off := before; off < int64(len(full)); {
		off += 16 + int64(binary.LittleEndian.Uint32(full[off+4:])) // a batch head: marker, length, checksums
		cuts = append(cuts, off)
	}
	if s.keeper.compactions != 0 {
		t.Fatal("the log was compacted: no save to cut")
	}
	if len(cuts) < 3 {
		t.Fatalf("the second save took %d batches; the test needs several", len(cuts))
	}
	if !testsize.Long() {
		// The short size: after the first batch, one in the middle and
		// the last (the save whole); the long size cuts after each.
		cuts = []int64{cuts[0], cuts[len(cuts)/2], cuts[len(cuts)-1]}
	}
	for _, cut := range cuts {
		d := t.TempDir()
		if err := os.WriteFile(filepath.Join(d, LogName), full[:cut], 0o644); err != nil {
			t.Fatal(err)
		}
		r := newTestState(d)
		mustRestore(t, r)
		if n := r.loadErrors(t); n != 0 {
			t.Fatalf("cut at %d: %g damaged records", cut, n)
		}
		var st store.State
		b, _ := json.Marshal(r.stores.Threads.Export())
		if err := json.Unmarshal(b, &st); err != nil {
			t.Fatal(err)
		}
		if len(st.Files) != threads {
			t.Fatalf("cut at %d: %d files restored, want %d", cut, len(st.Files), threads)
		}
		for p, f := range st.Files {
			var out int64
			for _, sv := range st.Threads[f.Key].Series {
				if sv.Family == "tokens" && sv.L1 == "model-0" && sv.L2 == "output" {
					out = sv.Value
				}
			}
			if out < f.Version.Size*100 {
				t.Fatalf("cut at %d: %s at version %d restored with %d output tokens", cut, p, f.Version.Size, out)
			}
		}
	}
}
