package store

import (
	"bytes"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/amp-exporter/amp-exporter/internal/testsupport/testutil"
	"github.com/amp-exporter/amp-exporter/internal/testsupport/threadtest"
	"github.com/amp-exporter/amp-exporter/parser/streamjson"
	"github.com/amp-exporter/amp-exporter/parser/thread"
	"github.com/amp-exporter/amp-exporter/pricing"
)

var fixedNow = time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)

func summaryOf(t *testing.T, doc string) *thread.Summary {
	t.Helper()
	th, err := thread.NewParser().ParseBytes([]byte(doc))
	if err != nil {
		t.Fatalf("fixture does not parse: %v", err)
	}
	return thread.Summarize(th)
}

// fixtureStore loads every parseable thread fixture of the parser into a
// store, as the watcher would.
func fixtureStore(t *testing.T, opts StoreOptions) *ThreadStore {
	t.Helper()
	if opts.Now == nil {
		opts.Now = func() time.Time { return fixedNow }
	}
	s := NewThreadStore(opts)
	s.SetPrices(embeddedPrices(t))
	for _, f := range testutil.ThreadFixtures(t) {
		s.Apply("/threads/"+f.Name, FileVersion{Size: int64(len(f.Data))}, f.Summary)
	}
	return s
}

func embeddedPrices(t *testing.T) Prices {
	t.Helper()
	tab, err := pricing.Embedded(func() time.Time { return fixedNow })
	if err != nil {
		t.Fatal(err)
	}
	return pricing.New(tab, "genai-prices", "test", nil)
}

func TestCostFollowsTokenGrowthAtCurrentPrices(t *testing.T) {
	s := NewThreadStore(StoreOptions{Now: func() time.Time { return fixedNow }})
	s.SetPrices(pricing.New(nil, "test", "1", map[string]pricing.Price{"m1": {Input: 2, Output: 10}}))
	s.Apply("/d/T-1.json", FileVersion{}, summaryOf(t, withTail("")))
	// 10 input × $2/M + 100 output × $10/M
	want := 10*2e-6 + 100*10e-6
	if got := Unfixed(FamCost, s.Snapshot().totals[SeriesKey{FamCost, "m1", "", ""}]); math.Abs(got-want) > 1e-12 {
		t.Fatalf("cost %v, want %v", got, want)
	}
	// New prices apply to new tokens only.
	s.SetPrices(pricing.New(nil, "test", "2", map[string]pricing.Price{"m1": {Input: 4, Output: 20}}))
	s.Apply("/d/T-1.json", FileVersion{Size: 1}, summaryOf(t, withTail("")))
	if got := Unfixed(FamCost, s.Snapshot().totals[SeriesKey{FamCost, "m1", "", ""}]); math.Abs(got-want) > 1e-12 {
		t.Fatalf("an identical rewrite re-priced old tokens: %v", got)
	}
	grown := withTail(`,{"role":"assistant","messageId":3,"content":[],"state":{"type":"complete","stopReason":"end_turn"},"usage":{"model":"m1","inputTokens":5,"outputTokens":50}}`)
	s.Apply("/d/T-1.json", FileVersion{Size: 2}, summaryOf(t, grown))
	want += 5*4e-6 + 50*20e-6
	if got := Unfixed(FamCost, s.Snapshot().totals[SeriesKey{FamCost, "m1", "", ""}]); math.Abs(got-want) > 1e-12 {
		t.Fatalf("cost after growth %v, want %v", got, want)
	}
	// A model nobody prices is counted as unpriced, never as $0.
	unknown := strings.ReplaceAll(withTail(""), `"m1"`, `"mystery-model"`)
	unknown = strings.Replace(unknown, `"T-1"`, `"T-2"`, 1)
	s.Apply("/d/T-2.json", FileVersion{}, summaryOf(t, unknown))
	snap := s.Snapshot()
	if got := snap.totals[SeriesKey{FamUnpriced, "mystery-model", "", ""}]; got != 110 {
		t.Fatalf("unpriced tokens %v, want 110", got)
	}
	if _, ok := snap.totals[SeriesKey{FamCost, "mystery-model", "", ""}]; ok {
		t.Fatal("an unpriced model got a cost series")
	}
}

const baseThread = `{"v":1,"id":"T-1","agentMode":"smart","messages":[
 {"role":"user","messageId":0,"content":[{"type":"text","text":"hi"}]},
 {"role":"assistant","messageId":1,"content":[{"type":"tool_use","id":"a","name":"Bash","input":{}}],
  "state":{"type":"complete","stopReason":"tool_use"},
  "usage":{"model":"m1","inputTokens":10,"outputTokens":100}},
 {"role":"user","messageId":2,"content":[{"type":"tool_result","toolUseID":"a","run":{"status":"done"}}]}
 %s]}`

func withTail(tail string) string { return strings.Replace(baseThread, "%s", tail, 1) }

func tokens(s *ThreadStore, model, typ string) float64 {
	return float64(s.Snapshot().totals[SeriesKey{FamTokens, model, typ, ""}])
}

func TestCountingRules(t *testing.T) {
	s := NewThreadStore(StoreOptions{Now: func() time.Time { return fixedNow }})
	grown := withTail(`,{"role":"assistant","messageId":3,"content":[],"state":{"type":"complete","stopReason":"end_turn"},"usage":{"model":"m1","inputTokens":5,"outputTokens":50}}`)
	steps := []struct {
		name       string
		doc        string
		wantOutput float64
		wantChange bool
	}{
		{"first snapshot", withTail(""), 100, true},
		{"identical rewrite", withTail(""), 100, false},
		{"growth adds the difference", grown, 150, true},
		{"truncation never lowers", withTail(""), 150, false},
		{"regrowth to the old size adds nothing", grown, 150, false},
	}
	for _, st := range steps {
		changed := s.Apply("/d/T-1.json", FileVersion{Size: int64(len(st.doc))}, summaryOf(t, st.doc))
		if got := tokens(s, "m1", "output"); got != st.wantOutput {
			t.Errorf("%s: output tokens %v, want %v", st.name, got, st.wantOutput)
		}
		if changed != st.wantChange {
			t.Errorf("%s: changed=%v, want %v", st.name, changed, st.wantChange)
		}
	}
	// The same thread in a second file (a copy) is not counted twice.
	s.Apply("/other/T-1.json", FileVersion{}, summaryOf(t, grown))
	if got := tokens(s, "m1", "output"); got != 150 {
		t.Errorf("a copy of the thread was counted again: %v", got)
	}
	if got := s.Snapshot().Threads[ThreadsKey{AgentMode: "medium"}]; got != 1 {
		t.Errorf("two files of one thread counted as %d threads", got)
	}
	s.Remove("/d/T-1.json")
	s.Remove("/other/T-1.json")
	if got := tokens(s, "m1", "output"); got != 150 {
		t.Errorf("removing files lowered a counter: %v", got)
	}
	if got := len(s.Snapshot().Threads); got != 0 {
		t.Errorf("threads present after removal: %d", got)
	}
}

// Counting rule 9 (docs/counting.md): values past the cap fold into "other".
func TestLabelCapFoldsIntoOther(t *testing.T) {
	var folded []string
	s := NewThreadStore(StoreOptions{MaxLabelValues: 2, OnFold: func(l string) { folded = append(folded, l) }})
	for i, model := range []string{"m1", "m2", "m3", "m4", "m3", "m1"} {
		doc := strings.ReplaceAll(withTail(""), `"m1"`, `"`+model+`"`)
		doc = strings.Replace(doc, `"T-1"`, `"T-`+string(rune('a'+i))+`"`, 1)
		s.Apply("/d/"+model+string(rune('a'+i)), FileVersion{}, summaryOf(t, doc))
	}
	if got := tokens(s, "other", "output"); got != 300 {
		t.Errorf("other = %v, want 300 (m3 twice, m4)", got)
	}
	if got := tokens(s, "m1", "output"); got != 200 {
		t.Errorf("m1 = %v, want 200", got)
	}
	if strings.Join(folded, ",") != "model,model" {
		t.Errorf("folds reported %v, want one per distinct folded model", folded)
	}
}

func TestStateRoundTrip(t *testing.T) {
	s := fixtureStore(t, StoreOptions{MaxLabelValues: 3})
	st := s.Export()
	data, err := json.Marshal(st)
	if err != nil {
		t.Fatal(err)
	}
	var back State
	if err := json.Unmarshal(data, &back); err != nil {
		t.Fatal(err)
	}
	restored := NewThreadStore(StoreOptions{MaxLabelValues: 3, Now: func() time.Time { return fixedNow }})
	if err := restored.Import(&back); err != nil {
		t.Fatal(err)
	}
	a, b := s.Snapshot(), restored.Snapshot()
	if len(a.totals) != len(b.totals) {
		t.Fatalf("series %d vs %d", len(a.totals), len(b.totals))
	}
	for k, v := range a.totals {
		if b.totals[k] != v {
			t.Errorf("%v: %v after restore, want %v", k, b.totals[k], v)
		}
	}
	// Re-applying the same files after a restart changes nothing.
	files, _ := filepath.Glob("../parser/thread/testdata/*.json")
	for _, f := range files {
		data, _ := os.ReadFile(f)
		if th, err := thread.NewParser().ParseBytes(data); err == nil {
			restored.Apply("/threads/"+filepath.Base(f), FileVersion{Size: int64(len(data))}, thread.Summarize(th))
		}
	}
	for k, v := range a.totals {
		if got := restored.Snapshot().totals[k]; got != v {
			t.Errorf("%v: %v after re-reading, want %v", k, got, v)
		}
	}
}

func TestImportRefusesDamagedState(t *testing.T) {
	good := fixtureStore(t, StoreOptions{}).Export()
	tests := map[string]func(*State){
		"version":        func(s *State) { s.Version = 99 },
		"unknown family": func(s *State) { s.Threads["T-x"] = ThreadState{Series: []SeriesValue{{Family: "bogus", Value: 1}}} },
		"negative":       func(s *State) { s.Threads["T-x"] = ThreadState{Series: []SeriesValue{{Family: "tokens", Value: -1}}} },
		"dangling file":  func(s *State) { s.Files["/x"] = FileRecord{Key: "T-nowhere"} },
		"pin out of range": func(s *State) {
			s.Threads["T-x"] = ThreadState{Pins: &PinState{Strings: []string{"m1"}, Tuples: []byte{2, 0, 0}, Items: []byte{0, 2}}}
		},
		"pin keys not ascending": func(s *State) {
			s.Threads["T-x"] = ThreadState{Pins: &PinState{Strings: []string{"m1"}, Tuples: []byte{2, 0, 0}, Items: []byte{5, 1, 0, 1}}}
		},
		"pin key without a tuple": func(s *State) {
			s.Threads["T-x"] = ThreadState{Pins: &PinState{Strings: []string{"m1"}, Tuples: []byte{2, 0, 0}, Items: []byte{5}}}
		},
		"pin tuple without a string": func(s *State) {
			s.Threads["T-x"] = ThreadState{Pins: &PinState{Strings: []string{"m1"}, Tuples: []byte{4, 0, 0}, Items: []byte{5, 1}}}
		},
		"pin tuple cut short": func(s *State) {
			s.Threads["T-x"] = ThreadState{Pins: &PinState{Strings: []string{"m1"}, Tuples: []byte{2, 0}, Items: []byte{5, 1}}}
		},
	}
	for name, damage := range tests {
		data, _ := json.Marshal(good)
		var st State
		_ = json.Unmarshal(data, &st)
		damage(&st)
		s := NewThreadStore(StoreOptions{})
		if err := s.Import(&st); err == nil {
			t.Errorf("%s: damaged state accepted", name)
		}
		if len(s.Snapshot().totals) != 0 {
			t.Errorf("%s: a refused state left data behind", name)
		}
	}
}

// streamStore feeds every stream-json capture of the parser's testdata
// through a Run into a store, as the tailer does.
func streamStore(t *testing.T) *StreamStore {
	t.Helper()
	s := NewStreamStore(NewLabelCap(100, nil), func() time.Time { return fixedNow })
	files, _ := filepath.Glob("../parser/streamjson/testdata/*.jsonl")
	if len(files) == 0 {
		t.Fatal("no captures")
	}
	p := streamjson.NewParser()
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var run streamjson.Run
		var incs []streamjson.Increments
		for _, line := range bytes.Split(data, []byte("\n")) {
			if m, ok, err := p.ParseLine(line); err == nil && ok {
				incs = append(incs, run.Apply(m))
			}
		}
		if ex, open := run.End(); open {
			incs = append(incs, streamjson.Increments{Executions: []streamjson.Execution{ex}})
		}
		s.ApplyFile(f, StreamFile{Offset: int64(len(data)), Run: run}, incs)
	}
	return s
}

func TestStreamStateRoundTrip(t *testing.T) {
	s := streamStore(t)
	data, err := json.Marshal(s.Export())
	if err != nil {
		t.Fatal(err)
	}
	var st StreamState
	if err := json.Unmarshal(data, &st); err != nil {
		t.Fatal(err)
	}
	back := NewStreamStore(NewLabelCap(100, nil), nil)
	if err := back.Import(&st); err != nil {
		t.Fatal(err)
	}
	a, b := s.Snapshot(), back.Snapshot()
	if len(a.totals) == 0 || len(a.totals) != len(b.totals) {
		t.Fatalf("series %d vs %d", len(a.totals), len(b.totals))
	}
	for k, v := range a.totals {
		if b.totals[k] != v {
			t.Errorf("%v: %v after restore, want %v", k, b.totals[k], v)
		}
	}
	st.Series = append(st.Series, SeriesValue{Family: "bogus", Value: 1})
	if err := NewStreamStore(NewLabelCap(100, nil), nil).Import(&st); err == nil {
		t.Fatal("damaged stream state accepted")
	}
}

func TestLongContextRequestsArePricedAtTheirTier(t *testing.T) {
	if thread.LongContextThreshold != pricing.LongContextThreshold {
		t.Fatal("the parser and the price table disagree on where long context starts")
	}
	s := NewThreadStore(StoreOptions{Now: func() time.Time { return fixedNow }})
	s.SetPrices(embeddedPrices(t))
	doc := `{"v":1,"id":"T-L","messages":[
	 {"role":"assistant","messageId":1,"content":[],"state":{"type":"complete","stopReason":"end_turn"},
	  "usage":{"model":"claude-sonnet-4-5-20250929","inputTokens":10,"outputTokens":1000,"cacheReadInputTokens":150000,"cacheCreationInputTokens":1000}},
	 {"role":"assistant","messageId":2,"content":[],"state":{"type":"complete","stopReason":"end_turn"},
	  "usage":{"model":"claude-sonnet-4-5-20250929","inputTokens":10,"outputTokens":1000,"cacheReadInputTokens":250000,"cacheCreationInputTokens":1000}}]}`
	s.Apply("/d/T-L.json", FileVersion{}, summaryOf(t, doc))
	// The first request is priced flat: 10×3 + 1000×15 + 150000×0.3 +
	// 1000×3.75 per million. In the second, the 50,000 cache-read tokens
	// past 200k are charged at the long-context $0.6, the rest flat (as
	// ccusage and LiteLLM price tiers).
	want := (10*3+1000*15+150000*0.3+1000*3.75)/1e6 + (10*3+1000*15+200000*0.3+50000*0.6+1000*3.75)/1e6
	if got := Unfixed(FamCost, s.Snapshot().totals[SeriesKey{FamCost, "claude-sonnet-4-5-20250929", "", ""}]); math.Abs(got-want) > 1e-9 {
		t.Fatalf("cost %v, want %v", got, want)
	}
}

// pausingPrices stops the first Lookup until released, so a test can change
// prices while an Apply is working out its contribution.
type pausingPrices struct {
	Prices
	entered, release chan struct{}
	once             sync.Once
}

func (p *pausingPrices) Lookup(m string) (pricing.Price, bool) {
	p.once.Do(func() { close(p.entered); <-p.release })
	return p.Prices.Lookup(m)
}

// TestPricesSetDuringApplyAreUsed: SetPrices promises its prices for every
// token counted once it has returned, also for an Apply that was already
// under way (it works out its contribution before taking the lock).
func TestPricesSetDuringApplyAreUsed(t *testing.T) {
	old := &pausingPrices{
		Prices:  pricing.New(nil, "test", "1", map[string]pricing.Price{"m1": {Input: 2, Output: 10}}),
		entered: make(chan struct{}), release: make(chan struct{}),
	}
	s := NewThreadStore(StoreOptions{})
	s.SetPrices(old)
	sum := threadtest.Summary(threadtest.Thread{ID: "T-1", Tokens: map[string]thread.Tokens{"m1": {Input: 1_000_000}}})
	done := make(chan struct{})
	go func() { s.Apply("/d/T-1.json", FileVersion{}, sum); close(done) }()
	<-old.entered
	s.SetPrices(pricing.New(nil, "test", "2", map[string]pricing.Price{"m1": {Input: 1.7, Output: 9}}))
	close(old.release)
	<-done
	if got := Unfixed(FamCost, s.Snapshot().totals[SeriesKey{FamCost, "m1", "", ""}]); got != 1.7 {
		t.Fatalf("1M input tokens counted after the price change cost $%v, want $1.7 (the new price)", got)
	}
}

// TestAmyStreamUpWhileAnyStreamIsHealthy: amy_stream_up is 1 while at least
// one stream of the upstream is connected, whatever the others do; with
// none followed it keeps what the last one to end left.
func TestAmyStreamUpWhileAnyStreamIsHealthy(t *testing.T) {
	s := NewAmyStore(NewLabelCap(100, nil), nil)
	up := func() bool {
		for _, u := range s.Snapshot() {
			if u.Name == "main" {
				return u.Up
			}
		}
		t.Fatal("no upstream main")
		return false
	}
	s.SetUpstreams([]string{"main"})
	if !up() {
		t.Fatal("down before any stream")
	}
	s.SetUp("main", "t1", true)
	s.SetUp("main", "t2", false)
	if !up() {
		t.Fatal("down while t1 is connected and only t2 is broken")
	}
	s.SetUp("main", "t1", false)
	if up() {
		t.Fatal("up with every stream broken")
	}
	s.StreamEnded("main", "t1")
	s.SetUp("main", "t2", true)
	s.StreamEnded("main", "t2")
	if !up() {
		t.Fatal("down with no stream followed after the last one ended well")
	}
	s.SetUp("main", "t3", false)
	s.StreamEnded("main", "t3")
	if up() {
		t.Fatal("up with no stream followed after the last one ended broken")
	}
}
