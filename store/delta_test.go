package store

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/amp-exporter/amp-exporter/internal/testsupport/threadtest"
	"github.com/amp-exporter/amp-exporter/parser/thread"
)

// replay applies deltas the way the state keeper persists them (last
// record wins) and restores a store from the result.
type replay struct {
	threads map[string]ThreadState
	files   map[string]FileRecord
}

func (r *replay) add(t *testing.T, d *ThreadDelta) {
	t.Helper()
	err := d.EachThread(func(k string, ts ThreadState) error {
		// Through JSON, as the keeper stores them.
		b, err := json.Marshal(ts)
		if err != nil {
			return err
		}
		var back ThreadState
		if err := json.Unmarshal(b, &back); err != nil {
			return err
		}
		r.threads[k] = back
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for p, f := range d.Files {
		if f == nil {
			delete(r.files, p)
		} else {
			r.files[p] = *f
		}
	}
}

func (r *replay) restore(t *testing.T) *ThreadStore {
	t.Helper()
	s := NewThreadStore(StoreOptions{Now: func() time.Time { return fixedNow }})
	for k, ts := range r.threads {
		if dropped, err := s.ImportThread(k, ts); err != nil || dropped != 0 {
			t.Fatalf("ImportThread(%q) = %d, %v", k, dropped, err)
		}
	}
	for p, f := range r.files {
		if err := s.ImportFile(p, f); err != nil {
			t.Fatal(err)
		}
	}
	return s
}

func TestExportDeltaHoldsOnlyWhatChanged(t *testing.T) {
	s := fixtureStore(t, StoreOptions{})
	r := &replay{threads: map[string]ThreadState{}, files: map[string]FileRecord{}}
	first := s.ExportDelta()
	if first.ThreadCount() < 5 || len(first.Files) < 5 {
		t.Fatalf("first delta: %d threads, %d files", first.ThreadCount(), len(first.Files))
	}
	r.add(t, first)
	if d := s.ExportDelta(); !d.Empty() {
		t.Fatalf("nothing changed, delta %+v", d)
	}
	// One thread grows: one thread and one file in the delta.
	s.Apply("/d/T-1.json", FileVersion{Size: 1}, summaryOf(t, withTail("")))
	d := s.ExportDelta()
	if d.ThreadCount() != 1 || len(d.Files) != 1 || d.Files["/d/T-1.json"] == nil {
		t.Fatalf("after one Apply: %+v", d)
	}
	// A save that failed gives its delta back; the next one holds it.
	s.Requeue(d)
	if d2 := s.ExportDelta(); d2.ThreadCount() != 1 || len(d2.Files) != 1 {
		t.Fatalf("requeued delta: %d threads, %d files", d2.ThreadCount(), len(d2.Files))
	}
	r.add(t, d)
	// A file removed: its record goes, the thread's contribution stays.
	s.Remove("/d/T-1.json")
	d = s.ExportDelta()
	if d.ThreadCount() != 0 || len(d.Files) != 1 || d.Files["/d/T-1.json"] != nil {
		t.Fatalf("after Remove: %+v", d)
	}
	r.add(t, d)

	restored := r.restore(t)
	a, b := s.Snapshot(), restored.Snapshot()
	if len(a.totals) == 0 || len(a.totals) != len(b.totals) {
		t.Fatalf("series %d vs %d", len(a.totals), len(b.totals))
	}
	for k, v := range a.totals {
		if b.totals[k] != v {
			t.Errorf("%v: %v restored from deltas, want %v", k, b.totals[k], v)
		}
	}
	if len(a.Threads) != len(b.Threads) || a.LastActivity != b.LastActivity {
		t.Errorf("threads %v vs %v, last activity %v vs %v", a.Threads, b.Threads, a.LastActivity, b.LastActivity)
	}
	if _, ok := restored.File("/d/T-1.json"); ok {
		t.Error("a removed file came back")
	}
}

// A delta taken while Apply runs elsewhere is consistent: built outside
// the lock from records that are never changed in place.
func TestExportDeltaConcurrentWithApply(t *testing.T) {
	s := NewThreadStore(StoreOptions{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := range 200 {
			s.Apply("/d/T-1.json", FileVersion{Size: int64(i)}, summaryOf(t, withTail("")))
		}
	}()
	for range 50 {
		_ = s.ExportDelta()
	}
	<-done
}

func TestImportThreadReadsAsFarAsKnown(t *testing.T) {
	s := NewThreadStore(StoreOptions{})
	dropped, err := s.ImportThread("T-1", ThreadState{Series: []SeriesValue{
		{Family: "tokens", L1: "m", L2: "output", Value: 5},
		{Family: "added_by_a_newer_version", Value: 7},
	}})
	if err != nil || dropped != 1 {
		t.Fatalf("dropped %d, err %v", dropped, err)
	}
	if got := s.Snapshot().totals[SeriesKey{FamTokens, "m", "output", ""}]; got != 5 {
		t.Fatalf("known series = %d, want 5", got)
	}
	if _, err := s.ImportThread("T-2", ThreadState{Series: []SeriesValue{{Family: "tokens", Value: -1}}}); err == nil {
		t.Fatal("negative value accepted")
	}
	if _, err := s.ImportThread("T-1", ThreadState{}); err == nil {
		t.Fatal("a thread restored twice was accepted")
	}
	if err := s.ImportFile("/x", FileRecord{Key: "T-nowhere"}); err == nil {
		t.Fatal("a file of an unknown thread was accepted")
	}
}

func TestSeriesListReadsBothForms(t *testing.T) {
	want := SeriesList{
		{Family: "tokens", L1: "claude-opus-4-6", L2: "output", Value: 1234},
		{Family: "prompts", Value: 7},
		{Family: "tool_calls", L1: "mcp__gh \"quoted\" \\ é\u2028", L2: "done", Value: 9223372036854775807},
	}
	b, err := json.Marshal(ThreadState{Series: want})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), `["tokens","claude-opus-4-6","output",1234]`) {
		t.Errorf("not the compact form: %s", b)
	}
	legacy := `{"series":[{"f":"tokens","a":"claude-opus-4-6","b":"output","v":1234},{"f":"prompts","v":7},` +
		`{"f":"tool_calls","a":"mcp__gh \"quoted\" \\ \u00e9\u2028","b":"done","v":9223372036854775807}]}`
	for name, doc := range map[string]string{"compact": string(b), "object": legacy, "spaced": strings.ReplaceAll(string(b), ",", " ,\n ")} {
		var got ThreadState
		if err := json.Unmarshal([]byte(doc), &got); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if !slices.Equal(got.Series, want) {
			t.Errorf("%s: got %+v", name, got.Series)
		}
	}
	for _, bad := range []string{`[`, `[[]]`, `[["a","b","c"]]`, `[["a","b","c",1.5]]`, `[["a","b","c",1],]`, `[["a","b","c",1]] x`, `[["a","b`, "[[\"a\x01\",\"\",\"\",1]]", `{}`} {
		var l SeriesList
		if err := json.Unmarshal([]byte(bad), &l); err == nil {
			t.Errorf("%q accepted as %+v", bad, l)
		}
	}
	var empty ThreadState
	if err := json.Unmarshal([]byte(`{"series":[]}`), &empty); err != nil || len(empty.Series) != 0 {
		t.Errorf("empty list: %+v %v", empty, err)
	}
}

func FuzzSeriesList(f *testing.F) {
	f.Add("tokens", "m", "output", int64(5))
	f.Add("", "\"\\", "\u2028é", int64(0))
	f.Fuzz(func(t *testing.T, fam, l1, l2 string, v int64) {
		in := SeriesList{{Family: fam, L1: l1, L2: l2, Value: v}}
		b, err := json.Marshal(in)
		if err != nil {
			return
		}
		var out SeriesList
		if err := json.Unmarshal(b, &out); err != nil {
			t.Fatalf("%s: %v", b, err)
		}
		// encoding/json replaces invalid UTF-8, so compare with its own
		// round trip of the strings.
		var want []string
		_ = json.Unmarshal([]byte(`[`+string(mustJSON(fam))+`,`+string(mustJSON(l1))+`,`+string(mustJSON(l2))+`]`), &want)
		if out[0].Family != want[0] || out[0].L1 != want[1] || out[0].L2 != want[2] || out[0].Value != v {
			t.Fatalf("%+v -> %s -> %+v", in, b, out)
		}
	})
}

func mustJSON(s string) []byte { b, _ := json.Marshal(s); return b }

// A delta never holds a file version newer than the contribution it holds
// for the file's thread, even when threads grow between the holds of the
// lock it is copied in (more files than one chunk; every thread grows
// after the first chunk).
func TestExportDeltaNeverPutsAFileAheadOfItsThread(t *testing.T) {
	s := NewThreadStore(StoreOptions{})
	const files = 2*exportChunk + 500
	apply := func(i, round int) {
		sum := threadtest.Summary(threadtest.Thread{ID: fmt.Sprintf("T-%d", i), Tokens: map[string]thread.Tokens{"m": {Output: int64(round) * 100}}})
		s.Apply(fmt.Sprintf("/d/%d.json", i), FileVersion{Size: int64(round)}, sum)
	}
	for i := range files {
		apply(i, 1)
	}
	holds := 0
	s.exportHook = func() {
		if holds++; holds == 1 {
			for i := range files {
				apply(i, 2)
			}
		}
	}
	r := &replay{threads: map[string]ThreadState{}, files: map[string]FileRecord{}}
	check := func() {
		for p, f := range r.files {
			var out int64
			for _, sv := range r.threads[f.Key].Series {
				if sv.Family == string(FamTokens) && sv.L2 == "output" {
					out = sv.Value
				}
			}
			if out < f.Version.Size*100 {
				t.Fatalf("%s at version %d saved with its thread at %d output tokens", p, f.Version.Size, out)
			}
		}
	}
	r.add(t, s.ExportDelta())
	if holds < 3 {
		t.Fatalf("the delta was copied in %d holds; the test needs several", holds)
	}
	check()
	// What changed meanwhile is in the next delta.
	r.add(t, s.ExportDelta())
	check()
	if f := r.files["/d/0.json"]; f.Version.Size != 2 {
		t.Errorf("the growth during the first delta was not in the second: %+v", f)
	}
}

// What Amp bills for a thread arrives after its counts (and may arrive
// after they were saved): it is in the next delta, not lost to a restart.
func TestBilledCostIsInTheNextDelta(t *testing.T) {
	s := newTestStore(0)
	s.Apply(AmpServerPath("T-1"), FileVersion{AmpServerV: 1}, summaryOf(t, threadDoc("T-1", "", userMsg(0, "go"), assistantMsg(1, stEndTurn, usageOf("m1", 10, 100)))))
	if d := s.ExportDelta(); d.ThreadCount() != 1 {
		t.Fatalf("first delta: %d threads", d.ThreadCount())
	}
	if !s.ApplyBilled("T-1", map[string]float64{"total": 0.5}) {
		t.Fatal("billed cost not applied")
	}
	d := s.ExportDelta()
	var billed int64
	if err := d.EachThread(func(key string, ts ThreadState) error {
		for _, sv := range ts.Series {
			if sv.Family == string(FamBilled) {
				billed += sv.Value
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if billed != fixed(FamBilled, 0.5) {
		t.Errorf("the delta after a bill holds billed %d, want %d", billed, fixed(FamBilled, 0.5))
	}
}
