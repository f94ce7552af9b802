//go:build e2e

package e2e

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/amp-exporter/amp-exporter/internal/testsupport/testutil"
)

// fixtures are the thread-parser fixtures the e2e tests copy into a thread
// directory. The list is explicit so the expected numbers in the tests stay
// tied to named files; five of them are deliberately broken.
var fixtures = []string{
	"array-top-level.json",      // not_thread
	"both-eras.json",            //
	"cancelled-and-errors.json", //
	"empty-ledger.json",         //
	"empty-thread.json",         //
	"fork-child.json",           //
	"garbage.json",              // invalid_json
	"ledger-era.json",           //
	"legacy-no-timestamps.json", //
	"openai-streaming.json",     //
	"settings.json",             // not_thread
	"trailing-data.json",        // invalid_json
	"truncated.json",            // truncated
	"usage-era.json",            //
}

// copyFixtures copies the named fixtures (all of them when none are named)
// into dir.
func copyFixtures(t *testing.T, dir string, names ...string) {
	t.Helper()
	if len(names) == 0 {
		names = fixtures
	}
	for _, n := range names {
		data, err := os.ReadFile(filepath.Join(repoRoot, "parser", "thread", "testdata", n))
		if err != nil {
			t.Fatalf("read fixture: %v", err)
		}
		if err := os.WriteFile(filepath.Join(dir, n), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// threadJSON is a small valid thread: one prompt and one finished assistant
// message with the given model and output tokens.
func threadJSON(id, model string, v, outputTokens int) []byte {
	return []byte(fmt.Sprintf(`{
  "v": %d,
  "id": %q,
  "created": 1780000000000,
  "agentMode": "smart",
  "messages": [
    {"role": "user", "messageId": 0, "content": [{"type": "text", "text": "hi"}], "meta": {"sentAt": 1780000001000}},
    {"role": "assistant", "messageId": 1, "content": [{"type": "text", "text": "hello"}],
     "state": {"type": "complete", "stopReason": "end_turn"},
     "usage": {"model": %q, "maxInputTokens": 200000, "inputTokens": 10, "outputTokens": %d,
               "cacheCreationInputTokens": 0, "cacheReadInputTokens": 0, "totalInputTokens": 10}}
  ]
}
`, v, id, model, outputTokens))
}

// ampLogin makes an XDG_DATA_HOME whose Amp CLI login (secrets.json) is
// the stand-in's key for the server at url, as `amp login` stores it, and
// returns it.
func ampLogin(t *testing.T, url string) string {
	t.Helper()
	data := t.TempDir()
	if err := os.MkdirAll(filepath.Join(data, "amp"), 0o700); err != nil {
		t.Fatal(err)
	}
	secrets, _ := json.Marshal(map[string]string{"apiKey@" + url + "/": standinKey})
	if err := os.WriteFile(filepath.Join(data, "amp", "secrets.json"), secrets, 0o600); err != nil {
		t.Fatal(err)
	}
	return data
}

// writeThreadLikeAmp writes dir/name the way the Amp CLI does: the whole
// document to name+".amptmp", then a rename over name.
func writeThreadLikeAmp(t *testing.T, dir, name string, data []byte) {
	t.Helper()
	tmp := filepath.Join(dir, name+".amptmp")
	if err := os.WriteFile(tmp, data, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, filepath.Join(dir, name)); err != nil {
		t.Fatal(err)
	}
}

// freePort returns a TCP port on 127.0.0.1 that was free a moment ago.
func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// requireTool finds a binary of Debian's prometheus package. A missing tool
// fails the test: these tests are the only place the exporter meets a real
// Prometheus, so skipping would hide that they never ran.
func requireTool(t *testing.T, name string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		t.Fatalf("%s not found on PATH (%v): run .ci/run, or install it with "+
			"`apt-get install -y --no-install-recommends prometheus` (Debian package, provides prometheus and promtool)", name, err)
	}
	return p
}

// process is a started child process with its output.
type process struct {
	name   string
	cmd    *exec.Cmd
	output *testutil.SyncBuffer // stdout and stderr
	done   chan struct{}
	err    error // Wait's result, once done is closed
}

func startProcess(t *testing.T, name string, env []string, bin string, args ...string) *process {
	t.Helper()
	p := &process{name: name, output: &testutil.SyncBuffer{}, done: make(chan struct{})}
	p.cmd = exec.Command(bin, args...)
	p.cmd.Env = env
	p.cmd.Stdout = p.output
	p.cmd.Stderr = p.output
	if err := p.cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", name, err)
	}
	go func() {
		p.err = p.cmd.Wait()
		close(p.done)
	}()
	t.Cleanup(func() {
		if err := p.stop(); err != nil {
			t.Errorf("%s did not stop cleanly: %v", name, err)
		}
		if t.Failed() {
			t.Logf("%s output:\n%s", name, p.output.String())
		}
	})
	return p
}

func (p *process) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// stop sends SIGTERM and waits for the process to exit (killing it after
// 15 s). It returns an error unless the process exited with status 0; a
// process that had already exited reports its earlier status.
func (p *process) stop() error {
	if !p.exited() {
		_ = p.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-p.done:
		case <-time.After(15 * time.Second):
			_ = p.cmd.Process.Kill()
			<-p.done
			return fmt.Errorf("%s ignored SIGTERM for 15s and was killed", p.name)
		}
	}
	return p.err
}

// exporter is a running amp-exporter.
type exporter struct {
	*process
	base       string // http://127.0.0.1:PORT
	user, pass string // basic auth, when set
}

type exporterOpts struct {
	threadsDir string   // AMP_THREADS_DIR (used when no --config.file is given)
	args       []string // extra flags
	user, pass string   // basic auth for the test's own requests
	env        []string // extra environment (after the defaults, so it wins)
	port       int      // the port to listen on (0: a free one), so a restart keeps its Prometheus target
}

// startExporter starts the exporter on a free port and waits until /-/ready
// answers 200.
func startExporter(t *testing.T, o exporterOpts) *exporter {
	t.Helper()
	port := o.port
	if port == 0 {
		port = freePort(t)
	}
	env := os.Environ()
	if o.threadsDir != "" {
		env = append(env, "AMP_THREADS_DIR="+o.threadsDir)
	} else {
		// Never fall back to the machine's real Amp directory.
		env = append(env, "AMP_THREADS_DIR="+filepath.Join(t.TempDir(), "no-threads-here"))
	}
	// Never follow the machine's real Amp account (the Amp server source
	// finds the key in AMP_API_KEY or the CLI's secrets.json).
	env = append(env, "AMP_API_KEY=", "XDG_DATA_HOME="+filepath.Join(t.TempDir(), "no-amp-login-here"),
		"AMP_SETTINGS_FILE=", "XDG_CONFIG_HOME="+filepath.Join(t.TempDir(), "no-amp-settings-here"))
	env = append(env, o.env...)
	args := append([]string{fmt.Sprintf("--web.listen-address=127.0.0.1:%d", port)}, o.args...)
	e := &exporter{
		process: startProcess(t, "amp-exporter", env, exporterBin, args...),
		base:    fmt.Sprintf("http://127.0.0.1:%d", port),
		user:    o.user, pass: o.pass,
	}
	e.waitReady(t)
	return e
}

func (e *exporter) waitReady(t *testing.T) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	var last string
	for time.Now().Before(deadline) {
		if e.exited() {
			t.Fatalf("exporter exited before it was ready: %v\n%s", e.err, e.output.String())
		}
		code, body, err := e.get("/-/ready")
		switch {
		case err != nil:
			last = err.Error()
		case code == http.StatusOK:
			return
		default:
			last = fmt.Sprintf("HTTP %d: %s", code, body)
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("exporter not ready after 15s; last answer: %s", last)
}

var httpClient = &http.Client{Timeout: 5 * time.Second}

// do sends a request to the exporter (with its basic auth, if any) and
// returns the status and body.
func (e *exporter) do(method, path string) (int, string, error) {
	req, err := http.NewRequest(method, e.base+path, nil)
	if err != nil {
		return 0, "", err
	}
	if e.user != "" {
		req.SetBasicAuth(e.user, e.pass)
	}
	resp, err := httpClient.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body), err
}

func (e *exporter) get(path string) (int, string, error) { return e.do(http.MethodGet, path) }

// tryMetrics scrapes /metrics and parses the text exposition.
func (e *exporter) tryMetrics() (map[string]*dto.MetricFamily, error) {
	code, body, err := e.get("/metrics")
	if err != nil {
		return nil, err
	}
	if code != http.StatusOK {
		return nil, fmt.Errorf("GET /metrics: HTTP %d: %s", code, body)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	return p.TextToMetricFamilies(strings.NewReader(body))
}

func (e *exporter) metrics(t *testing.T) map[string]*dto.MetricFamily {
	t.Helper()
	mfs, err := e.tryMetrics()
	if err != nil {
		t.Fatal(err)
	}
	return mfs
}

// value sums the samples of the counter, gauge or untyped family name whose
// labels include all of labels, and says how many series matched.
func value(mfs map[string]*dto.MetricFamily, name string, labels map[string]string) (sum float64, n int) {
	mf := mfs[name]
	if mf == nil {
		return 0, 0
	}
next:
	for _, m := range mf.GetMetric() {
		have := map[string]string{}
		for _, lp := range m.GetLabel() {
			have[lp.GetName()] = lp.GetValue()
		}
		for k, v := range labels {
			if have[k] != v {
				continue next
			}
		}
		switch {
		case m.Counter != nil:
			sum += m.GetCounter().GetValue()
		case m.Gauge != nil:
			sum += m.GetGauge().GetValue()
		case m.Untyped != nil:
			sum += m.GetUntyped().GetValue()
		case m.Histogram != nil:
			sum += float64(m.GetHistogram().GetSampleCount()) // observations
		default:
			continue
		}
		n++
	}
	return sum, n
}

// mustValue is value for exactly one series.
func mustValue(t *testing.T, mfs map[string]*dto.MetricFamily, name string, labels map[string]string) float64 {
	t.Helper()
	v, n := value(mfs, name, labels)
	if n != 1 {
		t.Fatalf("%s%v: %d series match, want 1", name, labels, n)
	}
	return v
}

// waitFor polls the exporter's /metrics until cond holds, for at most d.
// cond returns a description of what it saw, for the failure message.
func (e *exporter) waitFor(t *testing.T, d time.Duration, what string, cond func(map[string]*dto.MetricFamily) (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(d)
	last := "no successful scrape"
	for {
		mfs, err := e.tryMetrics()
		if err != nil {
			last = err.Error()
		} else {
			ok, saw := cond(mfs)
			if ok {
				return
			}
			last = saw
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not reached within %s; last seen: %s", what, d, last)
		}
		if e.exited() {
			t.Fatalf("%s: exporter exited: %v", what, e.err)
		}
		time.Sleep(25 * time.Millisecond)
	}
}

// prometheus is a running Prometheus server.
type prometheus struct {
	*process
	base string
}

// startPrometheus runs Prometheus in the foreground with its own storage,
// scraping target (host:port) as job "amp" every second, and waits until it
// is ready.
func startPrometheus(t *testing.T, target string) *prometheus {
	t.Helper()
	return startPrometheusWith(t, target, "amp")
}

// startPrometheusWith is startPrometheus with a job name and rule files.
func startPrometheusWith(t *testing.T, target, job string, ruleFiles ...string) *prometheus {
	t.Helper()
	bin := requireTool(t, "prometheus")
	dir := t.TempDir()
	rules := ""
	if len(ruleFiles) > 0 {
		rules = "rule_files:\n"
		for _, f := range ruleFiles {
			rules += fmt.Sprintf("  - %q\n", f)
		}
	}
	cfg := fmt.Sprintf(`global:
  scrape_interval: 1s
  scrape_timeout: 1s
  evaluation_interval: 1s
%sscrape_configs:
  - job_name: %s
    scrape_interval: 1s
    scrape_timeout: 1s
    static_configs:
      - targets: [%q]
`, rules, job, target)
	cfgFile := filepath.Join(dir, "prometheus.yml")
	if err := os.WriteFile(cfgFile, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	port := freePort(t)
	p := &prometheus{
		process: startProcess(t, "prometheus", os.Environ(), bin,
			"--config.file="+cfgFile,
			"--storage.tsdb.path="+filepath.Join(dir, "data"),
			fmt.Sprintf("--web.listen-address=127.0.0.1:%d", port),
		),
		base: fmt.Sprintf("http://127.0.0.1:%d", port),
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		if p.exited() {
			t.Fatalf("prometheus exited at start: %v", p.err)
		}
		resp, err := httpClient.Get(p.base + "/-/ready")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return p
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("prometheus not ready after 30s")
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// query runs an instant query and returns the vector result keyed by the
// value of label key ("" for a query expected to return one series; more
// than one series then is an error).
func (p *prometheus) query(q, key string) (map[string]float64, error) {
	resp, err := httpClient.Get(p.base + "/api/v1/query?query=" + url.QueryEscape(q))
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var r struct {
		Status    string `json:"status"`
		Error     string `json:"error"`
		ErrorType string `json:"errorType"`
		Data      struct {
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
	if r.Status != "success" {
		return nil, fmt.Errorf("query %s: %s: %s", q, r.ErrorType, r.Error)
	}
	if r.Data.ResultType != "vector" {
		return nil, fmt.Errorf("query %s: result type %q, want vector", q, r.Data.ResultType)
	}
	out := map[string]float64{}
	for _, s := range r.Data.Result {
		k := s.Metric[key]
		if _, dup := out[k]; dup {
			return nil, fmt.Errorf("query %s: two series with %s=%q", q, key, k)
		}
		str, ok := s.Value[1].(string)
		if !ok {
			return nil, fmt.Errorf("query %s: bad sample %v", q, s.Value)
		}
		v, err := strconv.ParseFloat(str, 64)
		if err != nil {
			return nil, err
		}
		out[k] = v
	}
	return out, nil
}

// queryRaw runs an instant query and returns its result type and how many
// series or samples it holds, or the error Prometheus reported.
func (p *prometheus) queryRaw(q string) (string, int, error) {
	resp, err := httpClient.Get(p.base + "/api/v1/query?query=" + url.QueryEscape(q))
	if err != nil {
		return "", 0, err
	}
	defer resp.Body.Close()
	var r struct {
		Status    string `json:"status"`
		Error     string `json:"error"`
		ErrorType string `json:"errorType"`
		Data      struct {
			ResultType string            `json:"resultType"`
			Result     []json.RawMessage `json:"result"`
		} `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&r); err != nil {
		return "", 0, fmt.Errorf("decode answer (HTTP %d): %w", resp.StatusCode, err)
	}
	if r.Status != "success" {
		return "", 0, fmt.Errorf("%s: %s", r.ErrorType, r.Error)
	}
	return r.Data.ResultType, len(r.Data.Result), nil
}

// formatVector renders a query result deterministically for messages.
func formatVector(m map[string]float64) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s=%g", k, m[k])
	}
	return "{" + strings.Join(parts, " ") + "}"
}

func equalVectors(a, b map[string]float64) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}
