//go:build e2e

package e2e

import (
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/amp-exporter/amp-exporter/internal/testsupport/ampservertest"
)

// usageDay is what the corpus spends on one UTC day.
type usageDay struct {
	start  time.Time
	tokens int64 // input + output
	micro  int64 // cost in micro-dollars: $3/M input and $15/M output are 3 and 15 µ$ per token
}

// backfillCorpus writes three weeks of usage: threads as files in dir and
// on the stand-in, about half each, some crossing midnight, some answers
// without a timestamp of their own (they take their prompt's). It returns
// the usage per day, computed while generating.
func backfillCorpus(t *testing.T, dir string, srv *ampservertest.Server, now time.Time) []usageDay {
	t.Helper()
	const days = 21
	rng := rand.New(rand.NewPCG(21, 2026))
	today := now.UTC().Truncate(24 * time.Hour)
	out := make([]usageDay, days)
	for k := range out {
		out[k].start = today.AddDate(0, 0, k-days)
	}
	dayOf := func(ms int64) int {
		for k := range out {
			if ms >= out[k].start.UnixMilli() && ms < out[k].start.Add(24*time.Hour).UnixMilli() {
				return k
			}
		}
		t.Fatalf("usage at %s is outside the corpus's days", time.UnixMilli(ms).UTC())
		return 0
	}
	n := 0
	for k := range days - 1 { // the last day stays quiet: it ends before the live part
		for range 1 + rng.IntN(4) {
			n++
			id := fmt.Sprintf("T-00000000-0000-4000-8000-%012d", n)
			created := out[k].start.Add(time.Duration(30+rng.IntN(20*60)) * time.Minute)
			if n%5 == 0 {
				created = out[k].start.Add(23*time.Hour + 10*time.Minute) // runs past midnight
			}
			var msgs []string
			at := created
			for j := range 2 + rng.IntN(8) {
				at = at.Add(time.Duration(1+rng.IntN(25)) * time.Minute)
				answered := at.Add(time.Duration(5+rng.IntN(50)) * time.Second)
				in, outTok := int64(500+rng.IntN(50_000)), int64(20+rng.IntN(4000))
				ts := fmt.Sprintf(`, "timestamp": %q`, answered.UTC().Format("2006-01-02T15:04:05.000Z"))
				itemAt := answered
				if j%3 == 2 {
					ts, itemAt = "", at // no timestamp of its own: its prompt's time
				}
				d := dayOf(itemAt.UnixMilli())
				out[d].tokens += in + outTok
				out[d].micro += 3*in + 15*outTok
				msgs = append(msgs,
					fmt.Sprintf(`{"role": "user", "messageId": %d, "content": [{"type": "text", "text": "step %d"}], "meta": {"sentAt": %d}}`,
						2*j, j, at.UnixMilli()),
					fmt.Sprintf(`{"role": "assistant", "messageId": %d, "content": [{"type": "text", "text": "ok"}],
 "state": {"type": "complete", "stopReason": "end_turn"},
 "usage": {"model": "test-model", "maxInputTokens": 200000, "inputTokens": %d, "outputTokens": %d,
  "cacheCreationInputTokens": 0, "cacheReadInputTokens": 0, "totalInputTokens": %d%s}}`, 2*j+1, in, outTok, in, ts))
				at = answered
			}
			doc := fmt.Sprintf(`{"v": %d, "id": %q, "created": %d, "agentMode": "smart", "messages": [%s]}`,
				2*len(msgs), id, created.UnixMilli(), strings.Join(msgs, ",\n"))
			if n%2 == 0 {
				if _, err := srv.Put([]byte(doc), at.UnixMilli()); err != nil {
					t.Fatal(err)
				}
			} else if err := os.WriteFile(filepath.Join(dir, id+".json"), []byte(doc), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	return out
}

// promSeries is one series of a range-vector answer.
type promSeries struct {
	labels map[string]string
	points [][2]float64 // time (s), value
}

// queryAt runs an instant query at time at and returns its result: a
// vector as one point per series, a matrix as all of them.
func (p *prometheus) queryAt(t *testing.T, q string, at time.Time) []promSeries {
	t.Helper()
	u := p.base + "/api/v1/query?query=" + url.QueryEscape(q) + "&time=" + strconv.FormatFloat(float64(at.UnixMilli())/1000, 'f', 3, 64)
	resp, err := httpClient.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var r struct {
		Status string `json:"status"`
		Error  string `json:"error"`
		Data   struct {
			ResultType string `json:"resultType"`
			Result     []struct {
				Metric map[string]string `json:"metric"`
				Value  []any             `json:"value"`
				Values [][]any           `json:"values"`
			} `json:"result"`
		} `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&r); err != nil {
		t.Fatalf("query %s: %v", q, err)
	}
	if r.Status != "success" {
		t.Fatalf("query %s: %s", q, r.Error)
	}
	point := func(v []any) [2]float64 {
		ts, _ := v[0].(float64)
		s, _ := v[1].(string)
		f, err := strconv.ParseFloat(s, 64)
		if err != nil {
			t.Fatalf("query %s: bad sample %v", q, v)
		}
		return [2]float64{ts, f}
	}
	var out []promSeries
	for _, s := range r.Data.Result {
		ps := promSeries{labels: s.Metric}
		if s.Value != nil {
			ps.points = append(ps.points, point(s.Value))
		}
		for _, v := range s.Values {
			ps.points = append(ps.points, point(v))
		}
		out = append(out, ps)
	}
	return out
}

// scalarAt is a query that gives at most one series; none is 0.
func (p *prometheus) scalarAt(t *testing.T, q string, at time.Time) float64 {
	t.Helper()
	r := p.queryAt(t, q, at)
	switch len(r) {
	case 0:
		return 0
	case 1:
		return r[0].points[0][1]
	default:
		t.Fatalf("query %s: %d series, want one", q, len(r))
		return 0
	}
}

// backfilled matches the families the backfill writes.
const backfilled = `{__name__=~"amp_(messages|prompts|tokens|credits|cost_usd|unpriced_tokens|assistant_messages|tool_calls|lines_changed|shell_commands)_total",job="amp"}`

// backfilledFamilies are the same, one by one (resets() drops the name, so
// it cannot take them together).
var backfilledFamilies = []string{"amp_messages_total", "amp_prompts_total", "amp_tokens_total", "amp_credits_total",
	"amp_cost_usd_total", "amp_unpriced_tokens_total", "amp_assistant_messages_total", "amp_tool_calls_total",
	"amp_lines_changed_total", "amp_shell_commands_total"}

// checkNoResets fails the test for every family with a reset over the
// last 30 days at now.
func checkNoResets(t *testing.T, p *prometheus, now time.Time) {
	t.Helper()
	for _, f := range backfilledFamilies {
		if r := p.scalarAt(t, `sum(resets(`+f+`{job="amp"}[30d]))`, now); r != 0 {
			t.Errorf("resets(%s) over the joined series: %g, want 0", f, r)
		}
	}
}

// TestBackfill is issue 21's "done when": three weeks of usage over thread
// files and the Amp server stand-in are backfilled, turned into blocks by
// promtool and loaded by Prometheus; the exporter then starts with a fresh
// state and is scraped. Every day's increase is that day's usage (tokens
// exactly, cost to the micro-dollar), the backfilled part joins the live
// part with equal values, and nothing resets.
func TestBackfill(t *testing.T) {
	requireTool(t, "promtool")
	requireTool(t, "prometheus")
	srv := ampservertest.New(standinKey, "dev@example.com")
	defer srv.Close()
	threadsDir := t.TempDir()
	days := backfillCorpus(t, threadsDir, srv, time.Now())
	var wantTokens int64
	for _, d := range days {
		wantTokens += d.tokens
	}

	work := t.TempDir()
	keyFile := filepath.Join(work, "amp-key")
	if err := os.WriteFile(keyFile, []byte(standinKey+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(work, "amp-exporter.yml")
	if err := os.WriteFile(cfg, []byte(fmt.Sprintf(`threads:
  dirs: [%q]
amp_server:
  enabled: "true"
  url: %q
  api_key_file: %q
  sync_interval: 1s
pricing:
  models:
    test-model: {input: 3, output: 15, cache_read: 0.3, cache_creation: 3.75}
`, threadsDir, srv.URL+"/", keyFile)), 0o644); err != nil {
		t.Fatal(err)
	}
	env := append(os.Environ(), "AMP_API_KEY=", "XDG_DATA_HOME="+filepath.Join(work, "no-amp-login-here"))
	port := freePort(t)
	instance := fmt.Sprintf("127.0.0.1:%d", port)

	// 1. backfill.
	om := filepath.Join(work, "history.om")
	cmd := exec.Command(exporterBin, "backfill", "--config.file="+cfg, "--output="+om,
		"--label=job=amp", "--label=instance="+instance)
	cmd.Env = env
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("backfill: %v\n%s", err, out)
	}
	t.Logf("backfill: %s", out)
	// 2. Blocks: exactly the command the backfill printed, with DATA_DIR
	// filled in. It makes one block: with promtool's default 2-hour blocks
	// it made one per two hours of history, reading the file once for each.
	_, next, ok := strings.Cut(string(out), "\nnext: ")
	next, _, _ = strings.Cut(next, "  (DATA_DIR: ")
	if !ok || !strings.HasPrefix(next, "promtool tsdb create-blocks-from openmetrics ") || !strings.Contains(next, om) {
		t.Fatalf("the summary does not say what to run next:\n%s", out)
	}
	data := filepath.Join(work, "prometheus-data")
	if out, err := exec.Command("sh", "-c", strings.Replace(next, "DATA_DIR", "'"+data+"'", 1)).CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s", next, err, out)
	}
	blocks, err := filepath.Glob(filepath.Join(data, "01*"))
	if err != nil || len(blocks) != 1 {
		t.Errorf("%s made %d blocks, want one (%v)", next, len(blocks), err)
	}
	until := lastSampleTime(t, om)

	// 3. The exporter, fresh state, counting all of it before it is
	// scraped (the server's threads arrive after the first file scan).
	exp := &exporter{
		process: startProcess(t, "amp-exporter", env, exporterBin, "--web.listen-address="+instance,
			"--config.file="+cfg, "--storage.path="+filepath.Join(work, "state")),
		base: "http://" + instance,
	}
	exp.waitReady(t)
	exp.waitFor(t, 30*time.Second, "every thread counted", func(mfs map[string]*dto.MetricFamily) (bool, string) {
		v, _ := value(mfs, "amp_tokens_total", nil)
		return v == float64(wantTokens), fmt.Sprintf("%g tokens of %d", v, wantTokens)
	})

	// 4. Prometheus on the blocks, scraping the exporter.
	prom := startPrometheusOn(t, data, instance)
	deadline := time.Now().Add(30 * time.Second)
	for {
		r := prom.queryAt(t, `amp_prompts_total{job="amp",source="threads"}[5m]`, time.Now())
		live := 0
		if len(r) == 1 {
			for _, p := range r[0].points {
				if p[0] > until {
					live++
				}
			}
		}
		if live >= 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("Prometheus did not scrape the exporter twice in 30s (%d live samples)", live)
		}
		time.Sleep(200 * time.Millisecond)
	}
	now := time.Now()

	// Every day's increase is its usage.
	checked := 0
	for _, d := range days {
		end := d.start.Add(24 * time.Hour)
		tokens := prom.scalarAt(t, `sum(amp_tokens_total{job="amp"})`, end) - prom.scalarAt(t, `sum(amp_tokens_total{job="amp"})`, d.start)
		if tokens != float64(d.tokens) {
			t.Errorf("%s: %g tokens, want %d", d.start.Format("2006-01-02"), tokens, d.tokens)
		}
		cost := prom.scalarAt(t, `sum(amp_cost_usd_total{job="amp"})`, end) - prom.scalarAt(t, `sum(amp_cost_usd_total{job="amp"})`, d.start)
		if math.Abs(cost-float64(d.micro)/1e6) >= 0.5e-6 {
			t.Errorf("%s: $%.7f, want $%.6f", d.start.Format("2006-01-02"), cost, float64(d.micro)/1e6)
		}
		if d.tokens > 0 {
			checked++
		}
	}
	if checked < 15 {
		t.Fatalf("only %d days with usage: the corpus tests too little", checked)
	}
	// Both sources are in the history.
	for _, src := range []string{"threads", "server"} {
		if v := prom.scalarAt(t, `sum(amp_tokens_total{job="amp",source="`+src+`"})`, days[len(days)-1].start); v == 0 {
			t.Errorf("no backfilled tokens from source %s", src)
		}
	}

	// The last backfilled sample of every series equals the first live one.
	joined := 0
	for _, s := range prom.queryAt(t, backfilled+"[10m]", now) {
		var last, first *[2]float64
		for i := range s.points {
			p := &s.points[i]
			if p[0] <= until {
				last = p
			} else if first == nil {
				first = p
			}
		}
		if last == nil || last[0] != until {
			continue // a live-only series (the exporter's zero-valued known series)
		}
		if first == nil {
			t.Errorf("%v: no live sample after the backfilled ones", s.labels)
			continue
		}
		if last[1] != first[1] {
			t.Errorf("%v: last backfilled %g, first live %g", s.labels, last[1], first[1])
		}
		joined++
	}
	if joined < 10 {
		t.Errorf("only %d series join the backfilled and live parts", joined)
	}
	// Nothing resets over the whole range, backfilled and live.
	if n := prom.scalarAt(t, `count(`+backfilled+`)`, now); n < 10 {
		t.Fatalf("only %g series in Prometheus", n)
	}
	checkNoResets(t, prom, now)
	if c := prom.scalarAt(t, `min(count_over_time(amp_tokens_total{job="amp"}[30d]))`, now); c < 100 {
		t.Errorf("count_over_time: %g samples, want the history's", c)
	}
}

// lastSampleTime is the time (s) of the last sample of an OpenMetrics file.
func lastSampleTime(t *testing.T, path string) float64 {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
	if lines[len(lines)-1] != "# EOF" || len(lines) < 2 {
		t.Fatalf("%s does not end with # EOF", path)
	}
	f := strings.Fields(lines[len(lines)-2])
	ts, err := strconv.ParseFloat(f[len(f)-1], 64)
	if err != nil {
		t.Fatal(err)
	}
	return ts
}

// startPrometheusOn runs Prometheus on an existing data directory with a
// retention that keeps the backfilled past, scraping target as job amp.
func startPrometheusOn(t *testing.T, data, target string) *prometheus {
	t.Helper()
	dir := t.TempDir()
	cfgFile := filepath.Join(dir, "prometheus.yml")
	if err := os.WriteFile(cfgFile, []byte(fmt.Sprintf(`global:
  scrape_interval: 1s
  scrape_timeout: 1s
scrape_configs:
  - job_name: amp
    static_configs:
      - targets: [%q]
`, target)), 0o644); err != nil {
		t.Fatal(err)
	}
	port := freePort(t)
	p := &prometheus{
		process: startProcess(t, "prometheus", os.Environ(), requireTool(t, "prometheus"),
			"--config.file="+cfgFile, "--storage.tsdb.path="+data, "--storage.tsdb.retention.time=3650d",
			fmt.Sprintf("--web.listen-address=127.0.0.1:%d", port)),
		base: fmt.Sprintf("http://127.0.0.1:%d", port),
	}
	deadline := time.Now().Add(60 * time.Second)
	for {
		if p.exited() {
			t.Fatalf("prometheus exited at start: %v", p.err)
		}
		if resp, err := httpClient.Get(p.base + "/-/ready"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return p
			}
		}
		if time.Now().After(deadline) {
			t.Fatal("prometheus not ready after 60s")
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestBackfillRemoteWrite pushes the history to Debian's Prometheus 2.42
// with the remote-write receiver on: with storage.tsdb.out_of_order_time_window
// set it takes every sample and the days add up; without it (its head
// already holds current samples, so the old ones are out of bounds) the
// backfill stops with one error naming the setting.
func TestBackfillRemoteWrite(t *testing.T) {
	requireTool(t, "prometheus")
	srv := ampservertest.New(standinKey, "dev@example.com")
	defer srv.Close()
	threadsDir := t.TempDir()
	days := backfillCorpus(t, threadsDir, srv, time.Now())
	work := t.TempDir()
	cfg := filepath.Join(work, "amp-exporter.yml")
	if err := os.WriteFile(cfg, []byte(fmt.Sprintf(`threads:
  dirs: [%q]
amp_server:
  enabled: "false"
pricing:
  models:
    test-model: {input: 3, output: 15, cache_read: 0.3, cache_creation: 3.75}
`, threadsDir)), 0o644); err != nil {
		t.Fatal(err)
	}
	env := append(os.Environ(), "AMP_API_KEY=", "XDG_DATA_HOME="+filepath.Join(work, "no-amp-login-here"))
	// Only the thread files (the server is off here): their share per day.
	var fileTokens int64
	for _, d := range days {
		fileTokens += d.tokens
	}

	for _, tc := range []struct {
		name   string
		window string
	}{
		{"out-of-order window", "60d"},
		{"refused", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			prom := startOOOReceiver(t, tc.window)
			cmd := exec.Command(exporterBin, "backfill", "--config.file="+cfg,
				"--label=job=amp", "--label=instance=laptop:9974", "--remote-write.url="+prom.base+"/api/v1/write")
			cmd.Env = env
			out, err := cmd.CombinedOutput()
			if tc.window == "" {
				if err == nil {
					t.Fatalf("the push of old samples succeeded without an out-of-order window:\n%s", out)
				}
				t.Logf("refused: %s", out)
				if !strings.Contains(string(out), "out_of_order_time_window") || strings.Count(string(out), "\n") > 2 {
					t.Errorf("want one clear error naming out_of_order_time_window, got:\n%s", out)
				}
				return
			}
			if err != nil {
				t.Fatalf("backfill: %v\n%s", err, out)
			}
			now := time.Now()
			total := prom.scalarAt(t, `sum(amp_tokens_total{job="amp",instance="laptop:9974"})`, now)
			if total == 0 || total > float64(fileTokens) {
				t.Fatalf("%g tokens in Prometheus; the corpus has %d, its files fewer", total, fileTokens)
			}
			// Every day's increase is that day's usage from the files:
			// the days' sum must be the total, and no day may be off by
			// more than the server's share (not pushed here).
			var sum float64
			for _, d := range days {
				end := d.start.Add(24 * time.Hour)
				sum += prom.scalarAt(t, `sum(amp_tokens_total{job="amp"})`, end) - prom.scalarAt(t, `sum(amp_tokens_total{job="amp"})`, d.start)
			}
			if sum != total {
				t.Errorf("the days add up to %g tokens, the last sample says %g", sum, total)
			}
			checkNoResets(t, prom, now)
		})
	}
}

// startOOOReceiver runs Prometheus with the remote-write receiver, scraping
// itself (so its head holds current samples), with an out-of-order window
// when window is not empty, and waits for its first scrape.
func startOOOReceiver(t *testing.T, window string) *prometheus {
	t.Helper()
	dir := t.TempDir()
	port := freePort(t)
	tsdb := ""
	if window != "" {
		tsdb = "storage:\n  tsdb:\n    out_of_order_time_window: " + window + "\n"
	}
	cfgFile := filepath.Join(dir, "prometheus.yml")
	if err := os.WriteFile(cfgFile, []byte(fmt.Sprintf(`global:
  scrape_interval: 1s
%sscrape_configs:
  - job_name: self
    static_configs:
      - targets: ["127.0.0.1:%d"]
`, tsdb, port)), 0o644); err != nil {
		t.Fatal(err)
	}
	p := &prometheus{
		process: startProcess(t, "prometheus", os.Environ(), requireTool(t, "prometheus"),
			"--config.file="+cfgFile, "--storage.tsdb.path="+filepath.Join(dir, "data"),
			"--web.enable-remote-write-receiver", fmt.Sprintf("--web.listen-address=127.0.0.1:%d", port)),
		base: fmt.Sprintf("http://127.0.0.1:%d", port),
	}
	deadline := time.Now().Add(60 * time.Second)
	for p.scalarAtTry(`count(up{job="self"})`) < 1 {
		if p.exited() {
			t.Fatalf("prometheus exited at start: %v", p.err)
		}
		if time.Now().After(deadline) {
			t.Fatal("prometheus did not scrape itself within 60s")
		}
		time.Sleep(200 * time.Millisecond)
	}
	return p
}

// scalarAtTry is an instant query now that gives one number, 0 on any
// failure (for polling).
func (p *prometheus) scalarAtTry(q string) float64 {
	m, err := p.query(q, "")
	if err != nil {
		return 0
	}
	return m[""]
}
