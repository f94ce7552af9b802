//go:build e2e

package e2e

import (
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"go.opentelemetry.io/collector/pdata/pmetric"

	"github.com/amp-exporter/amp-exporter/internal/testsupport/ampservertest"
	"github.com/amp-exporter/amp-exporter/internal/testsupport/threadgen"
)

// otlpResource are the resource attributes every OTLP test pushes with;
// user and host are promoted to labels by the receiver's configuration.
const otlpResource = `{service.instance.id: laptop-7, user: alice, host: laptop-7}`

// startOTLPReceiver runs Prometheus 3 with its OTLP receiver on port, its
// TSDB in dataDir, promoting the user and host resource attributes to
// labels, under the given translation strategy ("" for its default).
// Start timestamps are ingested as a zero sample before a series' first
// sample (created-timestamp-zero-ingestion): a counter pushed with a new
// start time after an exporter restart then shows as a reset to
// increase(), and the total would count twice.
func startOTLPReceiver(t *testing.T, bin, dataDir string, port int, strategy string) *prometheus {
	t.Helper()
	cfg := "global:\n  evaluation_interval: 1s\notlp:\n  promote_resource_attributes: [user, host]\n"
	if strategy != "" {
		cfg += "  translation_strategy: " + strategy + "\n"
	}
	cfgFile := filepath.Join(t.TempDir(), "receiver.yml")
	if err := os.WriteFile(cfgFile, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	p := &prometheus{
		process: startProcess(t, "prometheus3", os.Environ(), bin,
			"--config.file="+cfgFile,
			"--storage.tsdb.path="+dataDir,
			fmt.Sprintf("--web.listen-address=127.0.0.1:%d", port),
			"--web.enable-otlp-receiver",
			"--enable-feature=created-timestamp-zero-ingestion",
		),
		base: fmt.Sprintf("http://127.0.0.1:%d", port),
	}
	deadline := time.Now().Add(60 * time.Second)
	for {
		if p.exited() {
			t.Fatalf("prometheus 3 exited at start: %v\n%s", p.err, p.output.String())
		}
		if resp, err := httpClient.Get(p.base + "/-/ready"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return p
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("prometheus 3 not ready after 60s")
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// otlpExporterConfig is the configuration of an exporter reading threads
// (and the Amp server, when extra says so) and pushing OTLP to endpoint.
func otlpExporterConfig(t *testing.T, threads, endpoint string, interval time.Duration, extra string) string {
	t.Helper()
	cfg := fmt.Sprintf(`threads:
  dirs: [%q]
otlp:
  - endpoint: %s
    interval: %s
    timeout: 1s
    resource_attributes: %s
%s`, threads, endpoint, interval, otlpResource, extra)
	path := filepath.Join(t.TempDir(), "amp-exporter.yml")
	if err := os.WriteFile(path, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// instantSeries is one series of an instant query, with all its labels.
type instantSeries struct {
	labels map[string]string
	value  float64
}

// querySeries runs an instant query and returns every series with its
// labels (the name under __name__).
func (p *prometheus) querySeries(q string) ([]instantSeries, error) {
	resp, err := httpClient.Get(p.base + "/api/v1/query?query=" + url.QueryEscape(q))
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var r struct {
		Status string `json:"status"`
		Error  string `json:"error"`
		Data   struct {
			ResultType string `json:"resultType"`
			Result     []struct {
				Metric map[string]string `json:"metric"`
				Value  [2]any            `json:"value"`
			} `json:"result"`
		} `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&r); err != nil {
		return nil, fmt.Errorf("decode answer (HTTP %d): %w", resp.StatusCode, err)
	}
	if r.Status != "success" || r.Data.ResultType != "vector" {
		return nil, fmt.Errorf("query %s: %s %s %s", q, r.Status, r.Data.ResultType, r.Error)
	}
	out := make([]instantSeries, 0, len(r.Data.Result))
	for _, s := range r.Data.Result {
		str, _ := s.Value[1].(string)
		v, err := strconv.ParseFloat(str, 64)
		if err != nil {
			return nil, fmt.Errorf("query %s: bad sample %v", q, s.Value)
		}
		out = append(out, instantSeries{labels: s.Metric, value: v})
	}
	return out, nil
}

// apiGet decodes the data of a GET on the receiver's HTTP API into v.
func (p *prometheus) apiGet(path string, v any) error {
	resp, err := httpClient.Get(p.base + path)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	r := struct {
		Status string `json:"status"`
		Error  string `json:"error"`
		Data   any    `json:"data"`
	}{Data: v}
	if err := json.NewDecoder(resp.Body).Decode(&r); err != nil {
		return fmt.Errorf("GET %s: decode answer (HTTP %d): %w", path, resp.StatusCode, err)
	}
	if r.Status != "success" {
		return fmt.Errorf("GET %s: %s", path, r.Error)
	}
	return nil
}

// pushedLabels are the labels the receiver adds to every pushed series:
// job and instance from service.name and service.instance.id, user and
// host promoted from the resource.
var pushedLabels = []string{"job", "instance", "user", "host"}

// scrapedSeries is family name's series in a scrape, keyed by their labels
// (a label with an empty value is no label, as in Prometheus).
func scrapedSeries(mfs map[string]*dto.MetricFamily, name string) map[string]float64 {
	out := map[string]float64{}
	for _, m := range mfs[name].GetMetric() {
		ls := map[string]string{}
		for _, lp := range m.GetLabel() {
			if lp.GetValue() != "" {
				ls[lp.GetName()] = lp.GetValue()
			}
		}
		var v float64
		switch {
		case m.Counter != nil:
			v = m.GetCounter().GetValue()
		case m.Gauge != nil:
			v = m.GetGauge().GetValue()
		case m.Untyped != nil:
			v = m.GetUntyped().GetValue()
		}
		out[seriesKey(ls)] = v
	}
	return out
}

// receivedSeries is the receiver's series of name pushed by alice's
// laptop, keyed as scrapedSeries keys them (without the labels the push
// adds).
func receivedSeries(p *prometheus, name string) (map[string]float64, error) {
	got, err := p.querySeries(fmt.Sprintf(`%s{user="alice",host="laptop-7"}`, name))
	if err != nil {
		return nil, err
	}
	out := map[string]float64{}
	for _, s := range got {
		ls := map[string]string{}
		for k, v := range s.labels {
			ls[k] = v
		}
		delete(ls, "__name__")
		for _, k := range pushedLabels {
			delete(ls, k)
		}
		out[seriesKey(ls)] = s.value
	}
	return out, nil
}

// diffSeries describes how got differs from want, exactly; "" when equal.
func diffSeries(got, want map[string]float64) string {
	var d []string
	for k, w := range want {
		g, ok := got[k]
		switch {
		case !ok:
			d = append(d, fmt.Sprintf("missing %s (scrape %v)", k, w))
		case g != w:
			d = append(d, fmt.Sprintf("%s: receiver %v, scrape %v", k, g, w))
		}
	}
	for k, g := range got {
		if _, ok := want[k]; !ok {
			d = append(d, fmt.Sprintf("extra %s = %v", k, g))
		}
	}
	sort.Strings(d)
	if len(d) > 8 {
		d = append(d[:8], fmt.Sprintf("… %d more", len(d)-8))
	}
	return strings.Join(d, "; ")
}

// matchedFamilies are the families whose every series the receiver must
// hold with the scrape's exact value: tokens and estimated dollars.
var matchedFamilies = []string{"amp_tokens_total", "amp_cost_usd_total"}

// waitReceiverMatchesScrape polls until, for every matched family, the
// receiver holds the series a scrape of e gives, with exactly its values,
// and the same per model sums; it returns that scrape.
func waitReceiverMatchesScrape(t *testing.T, e *exporter, p *prometheus, d time.Duration) map[string]*dto.MetricFamily {
	t.Helper()
	var mfs map[string]*dto.MetricFamily
	waitCond(t, d, "the receiver's tokens and dollars equal the scrape's", func() (bool, string) {
		var err error
		if mfs, err = e.tryMetrics(); err != nil {
			return false, err.Error()
		}
		for _, fam := range matchedFamilies {
			want := scrapedSeries(mfs, fam)
			if len(want) == 0 {
				return false, fam + ": the scrape has no series"
			}
			got, err := receivedSeries(p, fam)
			if err != nil {
				return false, err.Error()
			}
			if diff := diffSeries(got, want); diff != "" {
				return false, fam + ": " + diff
			}
			// Per model, as a dashboard sums them.
			perModel, err := p.query(fmt.Sprintf(`sum by (model) (%s{user="alice",host="laptop-7"})`, fam), "model")
			if err != nil {
				return false, err.Error()
			}
			if wantModel := byLabel(mfs, fam, "model", nil); !closeVectors(perModel, wantModel) {
				return false, fmt.Sprintf("%s by model: receiver %s, scrape %s", fam, formatVector(perModel), formatVector(wantModel))
			}
		}
		return true, ""
	})
	return mfs
}

// seriesNames are the names of the series a scrape gives: a histogram's
// _bucket, _sum and _count, a summary's quantiles under its own name and
// its _sum and _count, every other family under its name. Families
// without series give none.
func seriesNames(mfs map[string]*dto.MetricFamily) map[string]bool {
	out := map[string]bool{}
	for name, mf := range mfs {
		if len(mf.GetMetric()) == 0 {
			continue
		}
		switch mf.GetType() {
		case dto.MetricType_HISTOGRAM, dto.MetricType_GAUGE_HISTOGRAM:
			out[name+"_bucket"], out[name+"_sum"], out[name+"_count"] = true, true, true
		case dto.MetricType_SUMMARY:
			out[name], out[name+"_sum"], out[name+"_count"] = true, true, true
		default:
			out[name] = true
		}
	}
	return out
}

// receivedNames are the metric names of the series alice's laptop pushed.
func receivedNames(p *prometheus) (map[string]bool, error) {
	var names []string
	if err := p.apiGet("/api/v1/label/__name__/values?"+url.Values{"match[]": {`{user="alice",host="laptop-7"}`}}.Encode(), &names); err != nil {
		return nil, err
	}
	out := map[string]bool{}
	for _, n := range names {
		out[n] = true
	}
	return out, nil
}

// checkNamesMatchScrape fails unless the receiver holds a series name for
// every name a scrape gives, and nothing else of alice's laptop but
// target_info (the resource's own series).
func checkNamesMatchScrape(t *testing.T, p *prometheus, mfs map[string]*dto.MetricFamily) {
	t.Helper()
	want := seriesNames(mfs)
	var missing, extra []string
	waitCond(t, 15*time.Second, "the receiver's series names are the scrape's", func() (bool, string) {
		got, err := receivedNames(p)
		if err != nil {
			return false, err.Error()
		}
		missing, extra = missing[:0], extra[:0]
		for n := range want {
			if !got[n] {
				missing = append(missing, n)
			}
		}
		for n := range got {
			if !want[n] && n != "target_info" {
				extra = append(extra, n)
			}
		}
		sort.Strings(missing)
		sort.Strings(extra)
		return len(missing) == 0 && len(extra) == 0, fmt.Sprintf("missing %v; not in the scrape %v", missing, extra)
	})
}

// threadIDPattern matches an Amp thread id anywhere in a string.
var threadIDPattern = regexp.MustCompile(`T-[0-9a-f]{8}-[0-9a-f]{4}-`)

// checkNoPrivateLabels fails if a label value of any series the receiver
// holds names a thread, a path on this machine or a prompt's words.
func checkNoPrivateLabels(t *testing.T, p *prometheus, prompts []string) {
	t.Helper()
	var series []map[string]string
	if err := p.apiGet("/api/v1/series?"+url.Values{"match[]": {`{__name__=~".+"}`}}.Encode(), &series); err != nil {
		t.Fatal(err)
	}
	if len(series) == 0 {
		t.Fatal("the receiver holds no series")
	}
	tmp := filepath.Clean(os.TempDir())
	for _, s := range series {
		for k, v := range s {
			bad := ""
			switch {
			case threadIDPattern.MatchString(v):
				bad = "a thread id"
			case strings.Contains(v, tmp) || strings.Contains(v, repoRoot):
				bad = "a path"
			}
			for _, pr := range prompts {
				if len(pr) >= 12 && strings.Contains(v, pr[:12]) {
					bad = "a prompt"
				}
			}
			if bad != "" {
				t.Errorf("label %s of %s holds %s: %q", k, s["__name__"], bad, v)
			}
		}
	}
}

// firstPrompts are the first user messages' texts of n threads of g, as
// the thread files hold them.
func firstPrompts(t *testing.T, g *threadgen.Generator, n int) []string {
	t.Helper()
	var out []string
	for i := range n {
		_, data := g.Thread(i)
		var th struct {
			Messages []struct {
				Role    string `json:"role"`
				Content []struct {
					Type string `json:"type"`
					Text string `json:"text"`
				} `json:"content"`
			} `json:"messages"`
		}
		if err := json.Unmarshal(data, &th); err != nil {
			t.Fatal(err)
		}
		for _, m := range th.Messages {
			if m.Role == "user" && len(m.Content) > 0 && m.Content[0].Type == "text" && m.Content[0].Text != "" {
				out = append(out, m.Content[0].Text)
				break
			}
		}
	}
	if len(out) == 0 {
		t.Fatal("the generated threads have no prompts")
	}
	return out
}

// restored are the families the state (--storage.path) keeps over a
// restart: their series keep their start time for good.
var restored = map[string]bool{"amp_tokens_total": true, "amp_cost_usd_total": true}

// checkCumulativePushes fails unless, in every forwarded request, the
// scrape's counters arrived as cumulative monotonic sums and its
// histograms as cumulative histograms; every cumulative point has a start
// time at or before its timestamp; the series of restored families keep
// their start time from push to push; and a series whose value falls (an
// exporter counter that starts again after a restart) comes with a later
// start time. It returns the start time of every series.
func checkCumulativePushes(t *testing.T, reqs []otlpRequest, mfs map[string]*dto.MetricFamily) map[string]time.Time {
	t.Helper()
	starts := map[string]time.Time{}
	last := map[string]float64{}
	errs := 0
	fail := func(format string, args ...any) {
		if errs++; errs <= 10 {
			t.Errorf(format, args...)
		}
	}
	forwarded := 0
	for _, r := range reqs {
		if r.refused {
			continue
		}
		forwarded++
		for _, pt := range r.points {
			mf := mfs[pt.metric]
			if mf == nil {
				continue // a family that has no series in this scrape
			}
			cumulative := false
			switch mf.GetType() {
			case dto.MetricType_COUNTER:
				cumulative = true
				if pt.kind != pmetric.MetricTypeSum || !pt.monotonic || pt.temporality != pmetric.AggregationTemporalityCumulative {
					fail("counter %s pushed as %v, monotonic %v, %v; want a cumulative monotonic sum", pt.metric, pt.kind, pt.monotonic, pt.temporality)
				}
			case dto.MetricType_HISTOGRAM:
				cumulative = true
				if pt.kind != pmetric.MetricTypeHistogram || pt.temporality != pmetric.AggregationTemporalityCumulative {
					fail("histogram %s pushed as %v, %v; want a cumulative histogram", pt.metric, pt.kind, pt.temporality)
				}
			case dto.MetricType_GAUGE:
				if pt.kind != pmetric.MetricTypeGauge {
					fail("gauge %s pushed as %v", pt.metric, pt.kind)
				}
			}
			if !cumulative {
				continue
			}
			if pt.start.IsZero() || pt.start.Unix() <= 0 || pt.start.After(pt.ts) {
				fail("%s: start time %v, point time %v", pt.series, pt.start, pt.ts)
			}
			prevStart, seen := starts[pt.series]
			moved := seen && !prevStart.Equal(pt.start)
			switch {
			case moved && restored[pt.metric]:
				// Restored from --storage.path: a new start time would
				// make a receiver count the whole total again.
				fail("%s: start time moved from %v to %v", pt.series, prevStart, pt.start)
			case moved && !pt.start.After(prevStart):
				fail("%s: start time moved back from %v to %v", pt.series, prevStart, pt.start)
			}
			if v, ok := last[pt.series]; ok && pt.value < v && !moved {
				// A counter that starts again from zero (the exporter's
				// own, not kept over a restart) must say so with a new
				// start time.
				fail("%s fell from %v to %v with its start time kept at %v: a reset without a new start time", pt.series, v, pt.value, pt.start)
			}
			starts[pt.series] = pt.start
			last[pt.series] = pt.value
		}
	}
	if forwarded == 0 {
		t.Fatal("no push reached the receiver")
	}
	if errs > 10 {
		t.Errorf("… %d problems in all", errs)
	}
	return starts
}

// sumByModel is family's scraped values summed by model over label
// filters.
func sumByModel(mfs map[string]*dto.MetricFamily, family string, labels map[string]string) map[string]float64 {
	out := map[string]float64{}
next:
	for _, m := range mfs[family].GetMetric() {
		ls := map[string]string{}
		for _, lp := range m.GetLabel() {
			ls[lp.GetName()] = lp.GetValue()
		}
		for k, v := range labels {
			if ls[k] != v {
				continue next
			}
		}
		out[ls["model"]] += m.GetCounter().GetValue()
	}
	return out
}

// minus is a - b element by element, without the zero results.
func minus(a, b map[string]float64) map[string]float64 {
	out := map[string]float64{}
	for k, v := range a {
		out[k] = v - b[k]
	}
	for k, v := range b {
		if _, ok := a[k]; !ok {
			out[k] = -v
		}
	}
	for k, v := range out {
		if math.Abs(v) < 1e-12 {
			delete(out, k)
		}
	}
	return out
}

// increaseByModel is what the receiver says family grew by, per model,
// since from: increase() over an anchored range (no extrapolation: the
// exact growth between the last sample before from and the last one).
func increaseByModel(p *prometheus, family, filter string, from time.Time) (map[string]float64, error) {
	secs := int(math.Ceil(time.Since(from).Seconds()))
	got, err := p.query(fmt.Sprintf(`sum by (model) (increase(%s{user="alice",host="laptop-7"%s}[%ds] anchored))`, family, filter, secs), "model")
	if err != nil {
		return nil, err
	}
	return minus(got, nil), nil
}

// The exporter pushes OTLP into a real Prometheus 3 through a recording
// proxy. Generated threads of both eras (usage blocks and usage ledgers,
// fast and plaid speeds, clock skew) and the thread-parser fixtures of
// each era are read as local files, more generated threads from the Amp
// server stand-in. Per series and per model, the tokens and estimated
// dollars in Prometheus equal exactly what a scrape of the same exporter
// gives, under the scrape's names; every counter arrives as a cumulative
// monotonic sum; the restored families keep their start time even over a
// restart with --storage.path, and a counter that starts again from zero
// there comes with a later one; increase() counts a new thread's tokens once, and
// over the restart equals exactly what was spent while the exporter was
// down. No label names a thread, a path or a prompt.
func TestOTLPPushMatchesScrapeThroughRestart(t *testing.T) {
	bin := requirePrometheus3(t)
	const n = 40
	g := threadgen.New(threadgen.Options{Threads: n, TotalBytes: n * 20_000, Seed: 38, Repositories: 3, ClockSkew: true, Speeds: true})
	threads := t.TempDir()
	for i := range n / 2 {
		name, data := g.Thread(i)
		if err := os.WriteFile(filepath.Join(threads, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	eras := []string{"usage-era.json", "ledger-era.json", "both-eras.json", "legacy-no-timestamps.json", "openai-streaming.json"}
	copyFixtures(t, threads, eras...)
	srv := ampservertest.New(standinKey, "dev@example.com")
	defer srv.Close()
	if err := srv.PutGenerated(g, n/2, n); err != nil {
		t.Fatal(err)
	}
	// The threads added later are Claude Sonnet 4.5 threads without a git
	// remote, locally and on the account, as legacy-no-timestamps.json is
	// locally and this one on the account: they add to series that
	// already exist. (A series' first point has its start time at the
	// push that first saw it, so a receiver cannot tell how much of a
	// new series' first value is new; existing series it can.)
	const sonnet = "claude-sonnet-4-5-20250929"
	if _, err := srv.Put(threadJSON("T-38a0e2e0-0000-4000-8000-000000000000", sonnet, 1, 100), time.Now().UnixMilli()); err != nil {
		t.Fatal(err)
	}

	rcv := startOTLPReceiver(t, bin, t.TempDir(), freePort(t), "")
	proxy := startOTLPProxy(t, rcv.base+"/api/v1/otlp/v1/metrics")
	cfg := otlpExporterConfig(t, threads, proxy.url(), time.Second, "amp_server:\n  sync_interval: 1s\n")
	storage := t.TempDir()
	opts := exporterOpts{
		args: []string{"--config.file=" + cfg, "--storage.path=" + storage},
		env:  []string{"XDG_DATA_HOME=" + ampLogin(t, srv.URL), "AMP_URL=" + srv.URL},
	}
	exp := startExporter(t, opts)
	want := float64(n + len(eras) + 1)
	exp.waitFor(t, 60*time.Second, "every thread counted", func(mfs map[string]*dto.MetricFamily) (bool, string) {
		v, _ := value(mfs, "amp_threads", nil)
		return v == want, fmt.Sprintf("threads %v of %v", v, want)
	})

	mfs := waitReceiverMatchesScrape(t, exp, rcv, 30*time.Second)
	if len(byLabel(mfs, "amp_tokens_total", "source", nil)) < 2 {
		t.Fatalf("the scrape has tokens of one source only: %v", byLabel(mfs, "amp_tokens_total", "source", nil))
	}
	checkNamesMatchScrape(t, rcv, mfs)
	checkNoPrivateLabels(t, rcv, firstPrompts(t, g, n))

	// A new thread while running: increase() counts its tokens once.
	before := sumByModel(exp.metrics(t), "amp_tokens_total", map[string]string{"token_type": "output"})
	mark := time.Now()
	time.Sleep(1500 * time.Millisecond) // a push between the mark and the new thread
	writeThreadLikeAmp(t, threads, "T-38a0e2e0-0000-4000-8000-000000000001.json",
		threadJSON("T-38a0e2e0-0000-4000-8000-000000000001", sonnet, 1, 777))
	exp.waitFor(t, 20*time.Second, "the new thread counted", func(mfs map[string]*dto.MetricFamily) (bool, string) {
		got := sumByModel(mfs, "amp_tokens_total", map[string]string{"token_type": "output"})
		return got[sonnet] == before[sonnet]+777, fmt.Sprintf("%s output %v, before %v", sonnet, got[sonnet], before[sonnet])
	})
	waitReceiverMatchesScrape(t, exp, rcv, 30*time.Second)
	waitCond(t, 15*time.Second, "increase() of the output tokens since the mark", func() (bool, string) {
		got, err := increaseByModel(rcv, "amp_tokens_total", `,token_type="output"`, mark)
		want := map[string]float64{sonnet: 777}
		return err == nil && closeVectors(got, want), fmt.Sprintf("got %s (err %v), want %s", formatVector(got), err, formatVector(want))
	})
	startsBefore := checkCumulativePushes(t, proxy.log(), mfs)

	// A restart with --storage.path: new threads arrive while the
	// exporter is down, locally and on the account.
	mfs = exp.metrics(t)
	tokens0 := sumByModel(mfs, "amp_tokens_total", nil)
	cost0 := sumByModel(mfs, "amp_cost_usd_total", nil)
	mark = time.Now()
	time.Sleep(1500 * time.Millisecond)
	if err := exp.stop(); err != nil {
		t.Fatalf("exporter stop: %v", err)
	}
	writeThreadLikeAmp(t, threads, "T-38a0e2e0-0000-4000-8000-000000000002.json",
		threadJSON("T-38a0e2e0-0000-4000-8000-000000000002", sonnet, 1, 4321))
	if _, err := srv.Put(threadJSON("T-38a0e2e0-0000-4000-8000-000000000003", sonnet, 1, 2500), time.Now().UnixMilli()); err != nil {
		t.Fatal(err)
	}
	exp = startExporter(t, opts)
	exp.waitFor(t, 60*time.Second, "both new threads counted after the restart", func(mfs map[string]*dto.MetricFamily) (bool, string) {
		v, _ := value(mfs, "amp_threads", nil)
		return v == want+3, fmt.Sprintf("threads %v of %v", v, want+3)
	})
	mfs = waitReceiverMatchesScrape(t, exp, rcv, 30*time.Second)
	spentTokens := minus(sumByModel(mfs, "amp_tokens_total", nil), tokens0)
	spentCost := minus(sumByModel(mfs, "amp_cost_usd_total", nil), cost0)
	if want := float64(10 + 4321 + 10 + 2500); spentTokens[sonnet] != want || len(spentTokens) != 1 {
		t.Fatalf("the scrape's growth over the restart: %s, want %s=%v", formatVector(spentTokens), sonnet, want)
	}
	waitCond(t, 15*time.Second, "increase() over the restart", func() (bool, string) {
		gotTokens, err1 := increaseByModel(rcv, "amp_tokens_total", "", mark)
		gotCost, err2 := increaseByModel(rcv, "amp_cost_usd_total", "", mark)
		return err1 == nil && err2 == nil && closeVectors(gotTokens, spentTokens) && closeVectors(gotCost, spentCost),
			fmt.Sprintf("tokens %s (err %v), want %s; USD %s (err %v), want %s",
				formatVector(gotTokens), err1, formatVector(spentTokens), formatVector(gotCost), err2, formatVector(spentCost))
	})
	// Prometheus saw no reset of any series of alice's laptop.
	waitQuery(t, rcv, fmt.Sprintf(`count(resets(amp_tokens_total{user="alice"}[%ds]) > 0) or vector(0)`, int(time.Since(mark).Seconds())+60),
		"", map[string]float64{"": 0}, 5*time.Second)

	startsAfter := checkCumulativePushes(t, proxy.log(), mfs)
	kept := 0
	for s, st := range startsBefore {
		// Only the restored families keep their start over the restart;
		// the exporter's own counters start again from zero, with a
		// later start time (checkCumulativePushes).
		if name, _, _ := strings.Cut(s, "{"); !restored[name] {
			continue
		}
		if after, ok := startsAfter[s]; ok {
			kept++
			if !after.Equal(st) {
				t.Errorf("%s: start time %v before the restart, %v after", s, st, after)
			}
		}
	}
	if kept == 0 {
		t.Error("no restored series pushed both before and after the restart")
	}
	checkNoPrivateLabels(t, rcv, firstPrompts(t, g, n))
	if v, _ := value(mfs, "amp_exporter_otlp_datapoints_total", map[string]string{"result": "sent"}); v == 0 {
		t.Error("amp_exporter_otlp_datapoints_total counted nothing sent")
	}
	for _, r := range []string{"failed", "rejected"} {
		if v, _ := value(mfs, "amp_exporter_otlp_datapoints_total", map[string]string{"result": r}); v != 0 {
			t.Errorf("%v data points %s by a healthy receiver", v, r)
		}
	}
}

// A receiver that refuses for a while: the proxy answers 429 and 503 with
// Retry-After (one of them longer than the push interval, so a push is
// given up and dropped) while a new thread is counted, then forwards
// again. The exporter waits what Retry-After says before it asks again;
// after the recovery the receiver's totals equal the scrape's, nothing
// lost; and every forwarded request carries only points of its own push:
// all at one time, no older than the push interval, each later than every
// point forwarded before (nothing old replayed).
func TestOTLPRetryAfterLosesNothingReplaysNothing(t *testing.T) {
	bin := requirePrometheus3(t)
	threads := t.TempDir()
	copyFixtures(t, threads, "usage-era.json", "ledger-era.json", "both-eras.json")
	rcv := startOTLPReceiver(t, bin, t.TempDir(), freePort(t), "")
	proxy := startOTLPProxy(t, rcv.base+"/api/v1/otlp/v1/metrics")
	const interval = 2 * time.Second
	exp := startExporter(t, exporterOpts{threadsDir: threads,
		args: []string{"--config.file=" + otlpExporterConfig(t, threads, proxy.url(), interval, "")}})
	waitReceiverMatchesScrape(t, exp, rcv, 30*time.Second)

	refusals := []refusal{
		{http.StatusTooManyRequests, time.Second},
		{http.StatusServiceUnavailable, time.Second},
		{http.StatusTooManyRequests, 3 * time.Second}, // past the interval: this push is dropped
		{http.StatusServiceUnavailable, time.Second},
		{http.StatusTooManyRequests, time.Second},
	}
	proxy.refuseNext(refusals...)
	const sonnet = "claude-sonnet-4-5-20250929"
	before := sumByModel(exp.metrics(t), "amp_tokens_total", map[string]string{"token_type": "output"})
	writeThreadLikeAmp(t, threads, "T-38b0e2e0-0000-4000-8000-000000000001.json",
		threadJSON("T-38b0e2e0-0000-4000-8000-000000000001", sonnet, 1, 999))
	exp.waitFor(t, 20*time.Second, "the new thread counted", func(mfs map[string]*dto.MetricFamily) (bool, string) {
		got := sumByModel(mfs, "amp_tokens_total", map[string]string{"token_type": "output"})
		return got[sonnet] == before[sonnet]+999, fmt.Sprintf("%s output %v, before %v", sonnet, got[sonnet], before[sonnet])
	})
	waitCond(t, 30*time.Second, "every refusal answered", func() (bool, string) {
		n := proxy.pendingRefusals()
		return n == 0, fmt.Sprintf("%d refusals still queued", n)
	})
	mfs := waitReceiverMatchesScrape(t, exp, rcv, 30*time.Second)
	if v, _ := value(mfs, "amp_exporter_otlp_datapoints_total", map[string]string{"result": "dropped"}); v == 0 {
		t.Error("the push refused past its interval was not counted as dropped")
	}
	if v, _ := value(mfs, "amp_exporter_otlp_datapoints_total", map[string]string{"result": "failed"}); v != 0 {
		t.Errorf("%v data points counted as failed: 429 and 503 are retried", v)
	}

	reqs := proxy.log()
	refused := 0
	lastTS := time.Time{}
	for i, r := range reqs {
		if r.refused {
			refused++
			if i+1 < len(reqs) {
				// Honoured: no request before Retry-After has passed
				// (the clock of this process, 50 ms for scheduling).
				if gap := reqs[i+1].received.Sub(r.received); gap < r.retry-50*time.Millisecond {
					t.Errorf("asked again %v after a %d with Retry-After %v", gap, r.status, r.retry)
				}
			}
			continue
		}
		if len(r.points) == 0 {
			t.Errorf("request %d forwarded no points", i)
			continue
		}
		ts := r.points[0].ts
		for _, pt := range r.points {
			if !pt.ts.Equal(ts) {
				t.Errorf("request %d mixes points of %v and %v (%s)", i, ts, pt.ts, pt.series)
				break
			}
		}
		if age := r.received.Sub(ts); age > interval+time.Second || age < -time.Second {
			t.Errorf("request %d at %v carries points of %v (%v old)", i, r.received.Format(time.RFC3339Nano), ts.Format(time.RFC3339Nano), age)
		}
		if !ts.After(lastTS) {
			t.Errorf("request %d replays points of %v, not after the %v already forwarded", i, ts, lastTS)
		}
		lastTS = ts
	}
	if refused != len(refusals) {
		t.Errorf("%d requests refused, want %d", refused, len(refusals))
	}
	checkCumulativePushes(t, reqs, mfs)
}

// translationStrategies are the otlp.translation_strategy values of
// Prometheus 3 (the first its default).
var translationStrategies = []string{
	"UnderscoreEscapingWithSuffixes",
	"UnderscoreEscapingWithoutSuffixes",
	"NoUTF8EscapingWithSuffixes",
	"NoTranslation",
}

// One exporter pushes to four Prometheus 3 receivers, one per translation
// strategy: under every one of them the receiver gives back exactly the
// series names of a scrape (histograms as classic _bucket, _sum and
// _count; nothing renamed, no unit appended twice, no _total doubled) and
// the scrape's token and dollar series with their exact values.
func TestOTLPNamesUnderEveryTranslationStrategy(t *testing.T) {
	bin := requirePrometheus3(t)
	threads := t.TempDir()
	copyFixtures(t, threads)
	rcvs := make([]*prometheus, len(translationStrategies))
	targets := ""
	for i, s := range translationStrategies {
		rcvs[i] = startOTLPReceiver(t, bin, t.TempDir(), freePort(t), s)
		if i > 0 {
			targets += fmt.Sprintf("  - endpoint: %s/api/v1/otlp/v1/metrics\n    interval: 1s\n    timeout: 1s\n    resource_attributes: %s\n",
				rcvs[i].base, otlpResource)
		}
	}
	cfg := otlpExporterConfig(t, threads, rcvs[0].base+"/api/v1/otlp/v1/metrics", time.Second, targets)
	exp := startExporter(t, exporterOpts{threadsDir: threads, args: []string{"--config.file=" + cfg}})
	for i, s := range translationStrategies {
		t.Run(s, func(t *testing.T) {
			mfs := waitReceiverMatchesScrape(t, exp, rcvs[i], 30*time.Second)
			checkNamesMatchScrape(t, rcvs[i], mfs)
		})
	}
}
