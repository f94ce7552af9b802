package collector

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"

	sharedtest "github.com/amp-exporter/amp-exporter/internal/testsupport/testutil"
	"github.com/amp-exporter/amp-exporter/parser/streamjson"
	"github.com/amp-exporter/amp-exporter/parser/thread"
	"github.com/amp-exporter/amp-exporter/pricing"
	"github.com/amp-exporter/amp-exporter/store"
)

var update = flag.Bool("update", false, "rewrite golden files")

var fixedNow = time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)

// fixtureStore loads every parseable thread fixture of the parser into a
// store, as the watcher would.
func fixtureStore(t *testing.T, opts store.StoreOptions) *store.ThreadStore {
	t.Helper()
	if opts.Now == nil {
		opts.Now = func() time.Time { return fixedNow }
	}
	s := store.NewThreadStore(opts)
	s.SetPrices(embeddedPrices(t))
	for _, f := range sharedtest.ThreadFixtures(t) {
		s.Apply("/threads/"+f.Name, store.FileVersion{Size: int64(len(f.Data))}, f.Summary)
	}
	return s
}

func embeddedPrices(t *testing.T) store.Prices {
	t.Helper()
	tab, err := pricing.Embedded(func() time.Time { return fixedNow })
	if err != nil {
		t.Fatal(err)
	}
	return pricing.New(tab, "genai-prices", "test", nil)
}

func TestCollectorMatchesGoldenExposition(t *testing.T) {
	s := fixtureStore(t, store.StoreOptions{})
	c := NewAmpCollector(s, nil)
	golden := filepath.Join("testdata", "fixtures.prom")
	if *update {
		reg := prometheus.NewPedanticRegistry()
		reg.MustRegister(c)
		var buf bytes.Buffer
		mfs, err := WithoutEmptyRepository(reg).Gather()
		if err != nil {
			t.Fatal(err)
		}
		for _, mf := range mfs {
			if err := writeText(&buf, mf); err != nil {
				t.Fatal(err)
			}
		}
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(golden, buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	f, err := os.Open(golden)
	if err != nil {
		t.Fatalf("%v (go test ./collector -update writes it)", err)
	}
	defer f.Close()
	if err := testutil.GatherAndCompare(shown(t, c), f); err != nil {
		t.Fatal(err)
	}
}

func TestCollectorLint(t *testing.T) {
	s := fixtureStore(t, store.StoreOptions{})
	problems, err := testutil.CollectAndLint(NewAmpCollector(s, nil))
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("lint: %s: %s", p.Metric, p.Text)
	}
	reg := prometheus.NewPedanticRegistry()
	m := NewExporterMetrics(reg)
	m.ParseFailed(store.SourceThreads, thread.ReasonTruncated)
	m.Parsed(store.SourceThreads, time.Millisecond)
	problems, err = testutil.GatherAndLint(reg)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("lint: %s: %s", p.Metric, p.Text)
	}
}

func TestKnownSeriesStartAtZero(t *testing.T) {
	c := NewAmpCollector(store.NewThreadStore(store.StoreOptions{}), nil)
	want := `
# HELP amp_messages_total Amp messages seen, by role (user, assistant).
# TYPE amp_messages_total counter
amp_messages_total{role="assistant",source="threads"} 0
amp_messages_total{role="user",source="threads"} 0
# HELP amp_prompts_total Amp user messages that are prompts (not tool-result carriers).
# TYPE amp_prompts_total counter
amp_prompts_total{source="threads"} 0
`
	if err := testutil.GatherAndCompare(shown(t, c), strings.NewReader(want), "amp_messages_total", "amp_prompts_total"); err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewPedanticRegistry()
	NewExporterMetrics(reg)
	if n, err := testutil.GatherAndCount(reg, "amp_exporter_parse_errors_total"); err != nil || n != 8 {
		t.Fatalf("parse error series at start = %d (%v), want all 5 thread and 3 stream reasons", n, err)
	}
}

func writeText(w *bytes.Buffer, mf *dto.MetricFamily) error {
	_, err := expfmt.MetricFamilyToText(w, mf)
	return err
}

// streamStore feeds every stream-json capture of the parser's testdata
// through a Run into a store, as the tailer does.
func streamStore(t *testing.T) *store.StreamStore {
	t.Helper()
	s := store.NewStreamStore(store.NewLabelCap(100, nil), func() time.Time { return fixedNow })
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
		s.ApplyFile(f, store.StreamFile{Offset: int64(len(data)), Run: run}, incs)
	}
	return s
}

func TestStreamFamiliesGoldenAndLint(t *testing.T) {
	c := NewAmpCollector(store.NewThreadStore(store.StoreOptions{}), streamStore(t))
	problems, err := testutil.CollectAndLint(c)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("lint: %s: %s", p.Metric, p.Text)
	}
	names := []string{"amp_executions_total", "amp_execution_duration_seconds", "amp_execution_turns",
		"amp_permission_denials_total", "amp_tokens_total", "amp_tool_calls_total", "amp_assistant_messages_total",
		"amp_messages_total", "amp_prompts_total"}
	golden := filepath.Join("testdata", "streams.prom")
	if *update {
		reg := prometheus.NewPedanticRegistry()
		reg.MustRegister(c)
		mfs, err := WithoutEmptyRepository(reg).Gather()
		if err != nil {
			t.Fatal(err)
		}
		var buf bytes.Buffer
		for _, mf := range mfs {
			for _, n := range names {
				if mf.GetName() == n {
					if err := writeText(&buf, mf); err != nil {
						t.Fatal(err)
					}
				}
			}
		}
		if err := os.WriteFile(golden, buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	f, err := os.Open(golden)
	if err != nil {
		t.Fatalf("%v (go test ./collector -update writes it)", err)
	}
	defer f.Close()
	if err := testutil.GatherAndCompare(shown(t, c), f, names...); err != nil {
		t.Fatal(err)
	}
}

func summaryOf(t *testing.T, doc string) *thread.Summary {
	t.Helper()
	th, err := thread.NewParser().ParseBytes([]byte(doc))
	if err != nil {
		t.Fatalf("fixture does not parse: %v", err)
	}
	return thread.Summarize(th)
}

const baseThread = `{"v":1,"id":"T-1","agentMode":"smart","messages":[
 {"role":"user","messageId":0,"content":[{"type":"text","text":"hi"}]},
 {"role":"assistant","messageId":1,"content":[{"type":"tool_use","id":"a","name":"Bash","input":{}}],
  "state":{"type":"complete","stopReason":"tool_use"},
  "usage":{"model":"m1","inputTokens":10,"outputTokens":100}},
 {"role":"user","messageId":2,"content":[{"type":"tool_result","toolUseID":"a","run":{"status":"done"}}]}
 %s]}`

func withTail(tail string) string { return strings.Replace(baseThread, "%s", tail, 1) }

// TestHostileLabelValuesLint: hostile values become valid, bounded label
// values (moved from the store's TestLabelCapFoldsIntoOther: the check is
// the collector's).
func TestHostileLabelValuesLint(t *testing.T) {
	doc := strings.Replace(withTail(""), `"m1"`, `"`+strings.Repeat("é", 200)+"\xff"+`"`, 1)
	s2 := store.NewThreadStore(store.StoreOptions{})
	s2.Apply("/d/x", store.FileVersion{}, summaryOf(t, doc))
	problems, err := testutil.CollectAndLint(NewAmpCollector(s2, nil))
	if err != nil || len(problems) != 0 {
		t.Fatalf("hostile label: %v %v", err, problems)
	}
}

// shown is c as /metrics shows it: registered alone on a pedantic
// registry, gathered without the empty repository label.
func shown(t *testing.T, c prometheus.Collector) prometheus.Gatherer {
	t.Helper()
	reg := prometheus.NewPedanticRegistry()
	if err := reg.Register(c); err != nil {
		t.Fatal(err)
	}
	return WithoutEmptyRepository(reg)
}
