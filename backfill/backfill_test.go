package backfill

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/amp-exporter/amp-exporter/internal/testsupport/threadgen"
	"github.com/amp-exporter/amp-exporter/parser/thread"
	"github.com/amp-exporter/amp-exporter/pricing"
	"github.com/amp-exporter/amp-exporter/store"
)

var update = flag.Bool("update", false, "rewrite the golden files")

// prices prices test-model at $3/$15/$0.30/$3.75 per million tokens.
func prices() store.Prices {
	return pricing.New(nil, "test", "1", map[string]pricing.Price{
		"test-model": pricing.MakePrice(ptr(3), ptr(15), ptr(0.3), ptr(3.75)),
	})
}

func ptr(f float64) *float64 {
	return &f
}

// msg is one exchange of a handmade thread: a prompt at sent, and an
// assistant answer with usage at at (0: no timestamp) calling tool (""
// for none).
type msg struct {
	sent, at      int64
	input, output int
	tool          string
	credits       string // a JSON number, "" for none
}

// doc is a thread document with the exchanges.
func doc(id string, created int64, msgs []msg) []byte {
	var b strings.Builder
	fmt.Fprintf(&b, `{"v": 1, "id": %q, "created": %d, "agentMode": "smart", "messages": [`, id, created)
	n := 0
	for i, m := range msgs {
		if i > 0 {
			b.WriteString(",")
		}
		sent := ""
		if m.sent > 0 {
			sent = fmt.Sprintf(`, "meta": {"sentAt": %d}`, m.sent)
		}
		fmt.Fprintf(&b, `{"role": "user", "messageId": %d, "content": [{"type": "text", "text": "go"}]%s},`, n, sent)
		n++
		ts := ""
		if m.credits != "" {
			ts = `, "credits": ` + m.credits
		}
		if m.at > 0 {
			ts += fmt.Sprintf(`, "timestamp": %q`, time.UnixMilli(m.at).UTC().Format("2006-01-02T15:04:05.000Z"))
		}
		content, stop := `{"type": "text", "text": "done"}`, "end_turn"
		if m.tool != "" {
			content, stop = fmt.Sprintf(`{"type": "tool_use", "id": "tu-%d", "name": %q, "input": {}}`, n, m.tool), "tool_use"
		}
		fmt.Fprintf(&b, `{"role": "assistant", "messageId": %d, "content": [%s], "state": {"type": "complete", "stopReason": %q},
 "usage": {"model": "test-model", "maxInputTokens": 200000, "inputTokens": %d, "outputTokens": %d,
  "cacheCreationInputTokens": 0, "cacheReadInputTokens": 0, "totalInputTokens": %d%s}}`, n, content, stop, m.input, m.output, m.input, ts)
		n++
		if m.tool != "" {
			fmt.Fprintf(&b, `,{"role": "user", "messageId": %d, "content": [{"type": "tool_result", "toolUseID": "tu-%d", "run": {"status": "done"}}]%s}`, n, n-1, sent)
			n++
		}
	}
	b.WriteString("]}")
	return []byte(b.String())
}

func summarize(t *testing.T, p *thread.Parser, data []byte) *thread.Summary {
	t.Helper()
	th, err := p.ParseBytes(data)
	if err != nil {
		t.Fatal(err)
	}
	return thread.Summarize(th)
}

const min5 = 5 * 60 * 1000

// base is a multiple of the step: 2026-03-02T00:00:00Z.
var base = time.Date(2026, 3, 2, 0, 0, 0, 0, time.UTC).UnixMilli()

// last returns the last point of every series, keyed by metric name and
// labels.
func last(series []Series) map[string]float64 {
	out := map[string]float64{}
	for _, s := range series {
		pts := points(s)
		out[seriesName(s.ID)] = Value(s.ID.Key.Fam, pts[len(pts)-1].V)
	}
	return out
}

// points collects a series' points into a slice of its length at once
// (slices.Collect grows it step by step, most of these tests' time on
// corpora of tens of thousands of points).
func points(s Series) []Point {
	out := make([]Point, 0, len(s.Times))
	for pt := range s.Points() {
		out = append(out, pt)
	}
	return out
}

func seriesName(id SeriesID) string {
	return string(appendSeries(nil, MetricName(id.Key.Fam), Labels(id, nil)))
}

// TestSamplesPerStep: each item counts from the first sample at or after
// its time; one without a time of its own takes the nearest earlier one
// (a tool result its message's, an answer without a timestamp its
// prompt's); items after Until are left to the live counters.
func TestSamplesPerStep(t *testing.T) {
	p := thread.NewParser()
	data := doc("T-1", base+1000, []msg{
		{sent: base + 60_000, at: base + 120_000, input: 100, output: 10},                  // sample base+5m
		{sent: base + 6*60_000, at: base + 7*60_000, input: 200, output: 20, tool: "Bash"}, // base+10m
		{sent: base + 11*60_000, at: 0, input: 300, output: 30},                            // no timestamp: its prompt's, base+15m
		{sent: base + 40*60_000, at: base + 41*60_000, input: 400, output: 40},             // after until
	})
	b, err := New(Options{Until: time.UnixMilli(base + 20*60_000), Prices: prices()})
	if err != nil {
		t.Fatal(err)
	}
	if err := b.AddThread(store.SourceThreads, "/d/T-1.json", summarize(t, p, data)); err != nil {
		t.Fatal(err)
	}
	times := b.Range(time.Time{})
	want := []int64{base + min5, base + 2*min5, base + 3*min5, base + 4*min5}
	if fmt.Sprint(times) != fmt.Sprint(want) {
		t.Fatalf("times %v, want %v", times, want)
	}
	got := map[string][]float64{}
	for _, s := range b.Series(times) {
		for pt := range s.Points() {
			got[seriesName(s.ID)] = append(got[seriesName(s.ID)], Value(s.ID.Key.Fam, pt.V))
		}
	}
	for name, vals := range map[string][]float64{
		`amp_tokens_total{model="test-model",source="threads",token_type="input"}`:  {100, 300, 600, 600},
		`amp_tokens_total{model="test-model",source="threads",token_type="output"}`: {10, 30, 60, 60},
		`amp_messages_total{role="user",source="threads"}`:                          {1, 3, 4, 4},
		`amp_tool_calls_total{source="threads",status="done",tool="Bash"}`:          {0, 1, 1, 1},
		// 600 input × $3/M + 60 output × $15/M
		`amp_cost_usd_total{model="test-model",source="threads"}`: {0.00045, 0.00135, 0.0027, 0.0027},
	} {
		g := got[name]
		if len(g) < len(vals) {
			g = append(make([]float64, len(vals)-len(g)), g...) // not there yet: 0
		}
		if fmt.Sprint(g) != fmt.Sprint(vals) {
			t.Errorf("%s: %v, want %v", name, g, vals)
		}
	}
	if st := b.Stats(); st.Later == 0 {
		t.Errorf("stats %+v: the item after until is not reported as left to the live counters", st)
	}
}

// TestLastSampleIsLiveValue: over a generated corpus, the last sample of
// every series equals what the live exporter's store counts from the same
// threads, for every backfilled family.
func TestLastSampleIsLiveValue(t *testing.T) {
	for _, maxValues := range []int{100, 2} {
		t.Run(fmt.Sprintf("max_label_values=%d", maxValues), func(t *testing.T) { testLastSampleIsLiveValue(t, maxValues) })
	}
}

// testLastSampleIsLiveValue: with maxValues 2, most models and tools fold
// into other, whose dollars mix models, and most repositories too. The
// threads' remotes are spread over 6 repositories in every form, some
// threads without one: the backfilled series carry the repository the
// live exporter gives them, so that history and live series join.
func testLastSampleIsLiveValue(t *testing.T, maxValues int) {
	g := threadgen.New(threadgen.Options{Threads: 40, TotalBytes: 4_000_000, Seed: 3, Repositories: 6})
	pr, err := pricing.Embedded(nil)
	if err != nil {
		t.Fatal(err)
	}
	prices := pricing.New(pr, "genai-prices", pr.Version, nil)
	b, err := New(Options{Until: time.Now(), Prices: prices, Labels: store.NewLabelCap(maxValues, nil), Repositories: store.NewRepositories(nil)})
	if err != nil {
		t.Fatal(err)
	}
	live := store.NewThreadStore(store.StoreOptions{MaxLabelValues: maxValues, Repositories: store.NewRepositories(nil)})
	live.SetPrices(prices)
	p := thread.NewParser()
	for i := range g.Len() {
		name, data := g.Thread(i)
		live.Apply(name, store.FileVersion{Size: int64(len(data))}, summarize(t, p, data))
		if err := b.AddThread(store.SourceThreads, name, summarize(t, p, data)); err != nil {
			t.Fatal(err)
		}
	}
	want := map[string]float64{}
	for k, v := range live.Snapshot().Totals() {
		if famIndex(k.Fam) >= 0 && v > 0 {
			want[seriesName(SeriesID{store.SourceThreads, k})] = Value(k.Fam, v)
		}
	}
	got := last(b.Series(b.Range(time.Time{})))
	if len(want) < 15 {
		t.Fatalf("only %d series counted live: the corpus is too small to test anything", len(want))
	}
	for _, name := range []string{`amp_lines_changed_total{kind="added",source="threads",tool="Edit"}`, `amp_shell_commands_total{outcome="success",source="threads"}`} {
		if maxValues == 100 && want[name] == 0 {
			t.Fatalf("nothing counted live in %s: the corpus does not test it", name)
		}
	}
	if other := `amp_cost_usd_total{model="other",source="threads"}`; maxValues == 2 && want[other] == 0 {
		t.Fatalf("nothing folded into %s", other)
	}
	repos := map[string]bool{}
	for k := range want {
		if _, v, ok := strings.Cut(k, `repository="`); ok {
			repos[v[:strings.IndexByte(v, '"')]] = true
		}
	}
	if wantRepos := min(6, maxValues+1); len(repos) != wantRepos {
		t.Fatalf("repositories in the live series %v, want %d", repos, wantRepos)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s: last sample %v, live %v", k, got[k], v)
		}
	}
	for k := range got {
		if _, ok := want[k]; !ok {
			t.Errorf("%s: backfilled, not counted live", k)
		}
	}
}

// TestSeriesNeverDecrease: cumulative values only grow, and each series
// has a sample at every time from its first on.
func TestSeriesNeverDecrease(t *testing.T) {
	g := threadgen.New(threadgen.Options{Threads: 20, TotalBytes: 1_000_000, Seed: 8})
	b, err := New(Options{Until: time.Now(), Step: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	p := thread.NewParser()
	for i := range g.Len() {
		name, data := g.Thread(i)
		if err := b.AddThread(store.SourceThreads, name, summarize(t, p, data)); err != nil {
			t.Fatal(err)
		}
	}
	times := b.Range(time.Time{})
	for _, s := range b.Series(times) {
		pts := points(s)
		first := len(times) - len(pts)
		for i, pt := range pts {
			if pt.T != times[first+i] {
				t.Fatalf("%s: point %d at %d, want %d", seriesName(s.ID), i, pt.T, times[first+i])
			}
			if i > 0 && pt.V < pts[i-1].V {
				t.Fatalf("%s: %d after %d", seriesName(s.ID), pt.V, pts[i-1].V)
			}
		}
	}
}

// TestOpenMetricsGolden: the file promtool reads, for a small thread.
func TestOpenMetricsGolden(t *testing.T) {
	p := thread.NewParser()
	data := doc("T-2", base, []msg{
		{sent: base + 60_000, at: base + 90_000, input: 1000, output: 50, tool: "edit_file"},
		{sent: base + 9*60_000, at: base + 9*60_000 + 500, input: 2000, output: 70},
	})
	b, err := New(Options{Until: time.UnixMilli(base + 12*60_000 + 345), Prices: prices()})
	if err != nil {
		t.Fatal(err)
	}
	if err := b.AddThread(store.SourceAmpServer, store.AmpServerPath("T-2"), summarize(t, p, data)); err != nil {
		t.Fatal(err)
	}
	target, err := ParseLabels([]string{"job=amp", "instance=laptop:9974"})
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	n, err := WriteOpenMetrics(&out, b.Series(b.Range(time.Time{})), target)
	if err != nil {
		t.Fatal(err)
	}
	if lines := strings.Count(out.String(), "\n") - 2*strings.Count(out.String(), "# TYPE") - 1; int64(lines) != n {
		t.Errorf("%d samples reported, %d written", n, lines)
	}
	golden := filepath.Join("testdata", "small.om")
	if *update {
		if err := os.WriteFile(golden, out.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if out.String() != string(want) {
		t.Errorf("output differs from %s (go test -update):\n%s", golden, out.String())
	}
}

func TestParseLabels(t *testing.T) {
	for _, tc := range []struct {
		in   []string
		want string // or the error's start
	}{
		{[]string{"job=amp", "instance=a:1"}, "[{instance a:1} {job amp}]"},
		{[]string{"user=alice", "host=x=y"}, "[{host x=y} {user alice}]"},
		{[]string{"job"}, `label "job": want NAME=VALUE`},
		{[]string{"1x=a"}, `label "1x=a": want NAME=VALUE`},
		{[]string{"__name__=x"}, `label "__name__=x": want NAME=VALUE`},
		{[]string{"model=x"}, `label "model=x": the metrics carry model`},
		{[]string{"source=x"}, `label "source=x": the metrics carry source`},
		{[]string{"job=a", "job=b"}, `label "job=b": job given twice`},
	} {
		got, err := ParseLabels(tc.in)
		s := fmt.Sprint(got)
		if err != nil {
			s = err.Error()
		}
		if !strings.HasPrefix(s, tc.want) {
			t.Errorf("ParseLabels(%q) = %s, want %s", tc.in, s, tc.want)
		}
	}
}

func TestNewRefusesBadOptions(t *testing.T) {
	for _, o := range []Options{
		{Step: time.Minute},
		{Until: time.Now(), Step: time.Millisecond},
		{Until: time.Now(), Step: 1500 * time.Microsecond},
	} {
		if _, err := New(o); err == nil {
			t.Errorf("New(%+v) accepted", o)
		}
	}
}

// TestReplayModes: applying each step's new items alone to the thread's
// store (the earlier ones leave the snapshot and the store keeps what they
// counted), or to a store of their own trued up to the whole thread's
// count, gives every sample of every series the same value as applying
// all the items up to the step, over a generated corpus.
func TestReplayModes(t *testing.T) {
	g := threadgen.New(threadgen.Options{Threads: 60, TotalBytes: 6_000_000, Seed: 11})
	pr, err := pricing.Embedded(nil)
	if err != nil {
		t.Fatal(err)
	}
	prices := pricing.New(pr, "genai-prices", pr.Version, nil)
	run := func(mode replay) []Series {
		t.Helper()
		defer func(was replay) { replayMode = was }(replayMode)
		replayMode = mode
		b, err := New(Options{Until: threadgen.DefaultStart.Add(threadgen.Spread + 72*time.Hour), Prices: prices, Step: time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		p := thread.NewParser()
		for i := range g.Len() {
			name, data := g.Thread(i)
			if err := b.AddThread(store.SourceThreads, name, summarize(t, p, data)); err != nil {
				t.Fatal(err)
			}
		}
		return b.Series(b.Range(time.Time{}))
	}
	collect := func(ss []Series) [][]Point {
		var out [][]Point
		for i := range ss {
			out = append(out, points(ss[i]))
		}
		return out
	}
	prefixSeries := run(replayPrefix)
	prefix := collect(prefixSeries)
	if len(prefix) < 20 {
		t.Fatalf("%d series: the corpus is too small", len(prefix))
	}
	for _, mode := range []replay{replayOnlyNew, replayFresh} {
		otherSeries := run(mode)
		other := collect(otherSeries)
		if len(prefix) != len(other) {
			t.Fatalf("mode %d: %d series against %d", mode, len(other), len(prefix))
		}
		for i := range prefix {
			if prefixSeries[i].ID != otherSeries[i].ID || !slices.Equal(prefix[i], other[i]) {
				a, b := prefix[i], other[i]
				t.Errorf("mode %d: %s: %d points, last %v; prefix: %d points, last %v", mode, seriesName(prefixSeries[i].ID), len(b), b[len(b)-1], len(a), a[len(a)-1])
			}
		}
	}
}

// TestTrueUp: where the store rounds a sum (credits, in nano-credits),
// counting each step's items apart rounds differently from counting them
// together; the steps are trued up to the whole thread's count, so the
// last sample is the live value exactly, and every sample is within one
// nano-credit per step of the rounding of its own cumulative sum (what
// applying every item up to the step gives).
func TestTrueUp(t *testing.T) {
	for _, credits := range []string{"0.0000000004", "0.0000000006", "0.25", "0.1000000004"} {
		data := doc("T-3", base, []msg{
			{sent: base + 60_000, at: base + 61_000, input: 10, output: 1, credits: credits},
			{sent: base + 6*60_000, at: base + 6*60_000 + 1000, input: 10, output: 1, credits: credits},
			{sent: base + 11*60_000, at: base + 11*60_000 + 1000, input: 10, output: 1, credits: credits},
		})
		run := func(mode replay) map[string][]Point {
			t.Helper()
			defer func(was replay) { replayMode = was }(replayMode)
			replayMode = mode
			b, err := New(Options{Until: time.UnixMilli(base + 20*60_000)})
			if err != nil {
				t.Fatal(err)
			}
			if err := b.AddThread(store.SourceThreads, "/d/T-3.json", summarize(t, thread.NewParser(), data)); err != nil {
				t.Fatal(err)
			}
			out := map[string][]Point{}
			for _, s := range b.Series(b.Range(time.UnixMilli(base))) {
				out[seriesName(s.ID)] = points(s)
			}
			return out
		}
		want, got := run(replayPrefix), run(replayFresh)
		const credit = `amp_credits_total{model="test-model",source="threads"}`
		if len(got) != len(want) {
			t.Fatalf("credits %s each: series %v, want %v", credits, got, want)
		}
		for name, w := range want {
			g := got[name]
			if name != credit && !slices.Equal(g, w) {
				t.Errorf("credits %s each: %s: %v, want %v", credits, name, g, w)
			}
		}
		g, w := got[credit], want[credit]
		if g[len(g)-1] != w[len(w)-1] {
			t.Errorf("credits %s each: last sample %v, want the live value %v", credits, g[len(g)-1], w[len(w)-1])
		}
		at := map[int64]int64{}
		for i, p := range g {
			at[p.T] = p.V
			if i > 0 && p.V < g[i-1].V {
				t.Errorf("credits %s each: %v goes down", credits, g)
			}
		}
		for i, p := range w {
			if abs(at[p.T]-p.V) > int64(i+1) {
				t.Errorf("credits %s each: %v, want within a nano-credit a step of %v", credits, g, w)
				break
			}
		}
	}
}

func abs(x int64) int64 {
	if x < 0 {
		return -x
	}
	return x
}

// TestScanFilesWorkersAgree: thread files parsed and replayed by several
// workers at once (sharing the Backfill's counter store, label cap and
// prices) give every sample of every series the same value as one worker;
// under -race (make unit) it also checks that the shared counting is safe.
func TestScanFilesWorkersAgree(t *testing.T) {
	files := generatedFiles(t, threadgen.Options{Threads: 48, TotalBytes: 5_000_000, Seed: 5})
	pr, err := pricing.Embedded(nil)
	if err != nil {
		t.Fatal(err)
	}
	prices := pricing.New(pr, "genai-prices", pr.Version, nil)
	run := func(workers int) (map[string][]Point, ScanResult) {
		t.Helper()
		b, err := New(Options{Until: threadgen.DefaultStart.Add(threadgen.Spread + 72*time.Hour), Prices: prices})
		if err != nil {
			t.Fatal(err)
		}
		res, err := ScanFiles(context.Background(), b, files, 1<<30, workers, store.NewOwners(), nil)
		if err != nil {
			t.Fatal(err)
		}
		out := map[string][]Point{}
		for _, s := range b.Series(b.Range(time.Time{})) {
			out[seriesName(s.ID)] = points(s)
		}
		return out, res
	}
	want, wantRes := run(1)
	if len(want) < 15 || wantRes.Files != len(files) {
		t.Fatalf("one worker: %d series from %d of %d files", len(want), wantRes.Files, len(files))
	}
	for _, workers := range []int{2, 4} {
		got, res := run(workers)
		if res.Files != wantRes.Files || res.Bytes != wantRes.Bytes {
			t.Errorf("%d workers read %d files / %d bytes, one worker %d / %d", workers, res.Files, res.Bytes, wantRes.Files, wantRes.Bytes)
		}
		if len(got) != len(want) {
			t.Errorf("%d workers: %d series, one worker %d", workers, len(got), len(want))
		}
		for name, w := range want {
			if !slices.Equal(got[name], w) {
				t.Errorf("%d workers: %s differs from one worker's", workers, name)
			}
		}
	}
}
