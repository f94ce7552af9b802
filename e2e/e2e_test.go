//go:build e2e

package e2e

import (
	"bytes"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"golang.org/x/crypto/bcrypt"
)

// TestPrometheusScrapesExporter runs a real Prometheus against the exporter
// watching a copy of the parser fixtures and checks what PromQL sees.
//
// The expected numbers come from parser/thread/testdata/golden/*.golden.json
// (one summary per fixture) and were checked against the exporter's
// /metrics:
//
//   - sum(amp_tokens_total{token_type="output"}) = 10372, the output tokens
//     of the nine readable threads: both-eras 244 (haiku 9 + opus-4-5 235),
//     cancelled-and-errors 8205, empty-ledger 7, empty-thread 0,
//     fork-child 70 (its own message only; the 2 copied from usage-era are
//     the parent's), ledger-era 244 (9 + 235), legacy-no-timestamps 300,
//     openai-streaming 455, usage-era 847 (haiku 22 + opus-4-6 825).
//   - amp_tokens_total{model="claude-opus-4-6",token_type="cache_read"} =
//     42700: usage-era 32900 + fork-child 9800.
//   - sum by (status) (amp_tool_calls_total):
//     done 10 = both-eras 2 (Grep, TodoWrite) + ledger-era 2 (same) +
//     openai-streaming 1 (Bash) + usage-era 5 (Bash, Edit, Glob, Read,
//     mcp__github);
//     error 3 = fork-child 1 (Bash) + usage-era 2 (WebFetch, tb);
//     cancelled 2 = cancelled-and-errors 1 (Task) + usage-era 1 (Bash);
//     rejected 1 = usage-era (Write).
//   - amp_exporter_parse_errors_total: truncated 1 (truncated.json, a cut
//     copy of usage-era), invalid_json 2 (garbage.json: missing comma;
//     trailing-data.json: a second top-level value), not_thread 2
//     (settings.json: no id/messages; array-top-level.json: a JSON array).
//   - sum(amp_threads) = 9: the 14 files minus those 5 broken ones (all nine
//     thread ids differ; truncated.json shares usage-era's id but never
//     parses). By agent_mode, under the CLI's names for the files' old ones
//     (smart, deep → medium; rush → low): medium 6, low 1, unknown 2.
func TestPrometheusScrapesExporter(t *testing.T) {
	requireTool(t, "prometheus")
	dir := t.TempDir()
	copyFixtures(t, dir)
	e := startExporter(t, exporterOpts{threadsDir: dir})
	p := startPrometheus(t, strings.TrimPrefix(e.base, "http://"))

	checks := []struct {
		query string
		key   string // label that keys the result; "" for one series
		want  map[string]float64
	}{
		{`up{job="amp"}`, "", map[string]float64{"": 1}},
		{`amp_exporter_build_info{job="amp",version="e2e"}`, "", map[string]float64{"": 1}},
		{`sum(amp_tokens_total{job="amp",token_type="output"})`, "", map[string]float64{"": 10372}},
		// Summed: the fixtures' threads of a model ran in two repositories.
		{`sum(amp_tokens_total{job="amp",model="claude-opus-4-6",token_type="cache_read"})`, "", map[string]float64{"": 42700}},
		{`sum by (status) (amp_tool_calls_total{job="amp"})`, "status",
			map[string]float64{"done": 10, "error": 3, "cancelled": 2, "rejected": 1}},
		{`amp_exporter_parse_errors_total{job="amp",source="threads",reason="truncated"}`, "", map[string]float64{"": 1}},
		{`amp_exporter_parse_errors_total{job="amp",source="threads",reason="invalid_json"}`, "", map[string]float64{"": 2}},
		{`amp_exporter_parse_errors_total{job="amp",source="threads",reason="not_thread"}`, "", map[string]float64{"": 2}},
		{`sum(amp_threads{job="amp"})`, "", map[string]float64{"": 9}},
		{`sum by (agent_mode) (amp_threads{job="amp"})`, "agent_mode", map[string]float64{"medium": 6, "low": 1, "unknown": 2}},
	}
	const timeout = 45 * time.Second // the first sample takes ~6 s even at 1 s
	deadline := time.Now().Add(timeout)
	for {
		var problems []string
		for _, c := range checks {
			got, err := p.query(c.query, c.key)
			switch {
			case err != nil:
				problems = append(problems, fmt.Sprintf("%s: %v", c.query, err))
			case !equalVectors(got, c.want):
				problems = append(problems, fmt.Sprintf("%s = %s, want %s", c.query, formatVector(got), formatVector(c.want)))
			}
		}
		if len(problems) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("Prometheus did not see the expected values within %s:\n  %s", timeout, strings.Join(problems, "\n  "))
		}
		if e.exited() {
			t.Fatalf("exporter exited: %v", e.err)
		}
		if p.exited() {
			t.Fatalf("prometheus exited: %v", p.err)
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// TestExpositionPassesPromtool pipes the exporter's /metrics, with every
// fixture loaded and every parse error counted, through
// `promtool check metrics`.
func TestExpositionPassesPromtool(t *testing.T) {
	promtool := requireTool(t, "promtool")
	dir := t.TempDir()
	copyFixtures(t, dir)
	e := startExporter(t, exporterOpts{threadsDir: dir})
	// Broken files are counted after one retry; wait so those series carry
	// their final values too.
	e.waitFor(t, 10*time.Second, "all parse errors counted", func(mfs map[string]*dto.MetricFamily) (bool, string) {
		v, _ := value(mfs, "amp_exporter_parse_errors_total", nil)
		return v == 5, fmt.Sprintf("sum(amp_exporter_parse_errors_total) = %g", v)
	})
	code, body, err := e.get("/metrics")
	if err != nil || code != http.StatusOK {
		t.Fatalf("GET /metrics: %d %v", code, err)
	}
	if !strings.Contains(body, "amp_tokens_total{") {
		t.Fatalf("exposition lacks amp_tokens_total:\n%s", body)
	}
	cmd := exec.Command(promtool, "check", "metrics")
	cmd.Stdin = strings.NewReader(body)
	out, err := cmd.CombinedOutput()
	if err != nil || len(bytes.TrimSpace(out)) > 0 {
		t.Fatalf("promtool check metrics: %v\n%s", err, out)
	}
}

// TestRewriteVisibleWithinOneSecond checks the product requirement that a
// rewritten thread shows in /metrics within one second, and that a rewrite
// replaces the thread's contribution instead of adding to it.
func TestRewriteVisibleWithinOneSecond(t *testing.T) {
	dir := t.TempDir()
	e := startExporter(t, exporterOpts{threadsDir: dir})
	time.Sleep(700 * time.Millisecond) // let the first scan's timers run out: measure an idle exporter

	const name = "T-0e2e0000-0000-7000-8000-000000000001.json"
	series := map[string]string{"model": "e2e-model", "source": "threads", "token_type": "output"}
	// observe polls until the series has want, and fails on any value
	// outside allowed (e.g. 1777 after the rewrite: a double count).
	observe := func(want float64, allowed ...float64) time.Duration {
		t.Helper()
		start := time.Now()
		for time.Since(start) < 5*time.Second {
			mfs, err := e.tryMetrics()
			if err != nil {
				t.Fatal(err)
			}
			v, n := value(mfs, "amp_tokens_total", series)
			if n > 1 {
				t.Fatalf("%d series for %v", n, series)
			}
			if n == 1 {
				if v == want {
					return time.Since(start)
				}
				ok := false
				for _, a := range allowed {
					ok = ok || v == a
				}
				if !ok {
					t.Fatalf("amp_tokens_total%v = %g, want %g", series, v, want)
				}
			}
			time.Sleep(10 * time.Millisecond)
		}
		t.Fatalf("amp_tokens_total%v did not reach %g within 5s", series, want)
		return 0
	}

	writeThreadLikeAmp(t, dir, name, threadJSON("T-0e2e0000-0000-7000-8000-000000000001", "e2e-model", 1, 777))
	if took := observe(777); took > time.Second {
		t.Errorf("new thread showed in /metrics after %s, want within 1s", took)
	} else {
		t.Logf("new thread visible after %s", took)
	}

	writeThreadLikeAmp(t, dir, name, threadJSON("T-0e2e0000-0000-7000-8000-000000000001", "e2e-model", 2, 1000))
	if took := observe(1000, 777); took > time.Second {
		t.Errorf("rewritten thread showed in /metrics after %s, want within 1s", took)
	} else {
		t.Logf("rewrite visible after %s", took)
	}
	// A late second application of the rewrite would show up now.
	time.Sleep(300 * time.Millisecond)
	if v := mustValue(t, e.metrics(t), "amp_tokens_total", series); v != 1000 {
		t.Fatalf("amp_tokens_total%v = %g after the rewrite settled, want 1000", series, v)
	}
}

// TestRestartWithStorageKeepsTotals checks --storage.path: the totals of a
// thread deleted while the exporter was down survive the restart, and a
// damaged state file is reported, set aside and counted.
func TestRestartWithStorageKeepsTotals(t *testing.T) {
	dir, storage := t.TempDir(), t.TempDir()
	copyFixtures(t, dir)
	opts := exporterOpts{threadsDir: dir, args: []string{"--storage.path=" + storage}}

	e := startExporter(t, opts)
	mfs := e.metrics(t)
	tokens, _ := value(mfs, "amp_tokens_total", nil)
	threads, _ := value(mfs, "amp_threads", nil)
	if threads != 9 {
		t.Fatalf("sum(amp_threads) = %g before the restart, want 9", threads)
	}
	if err := e.stop(); err != nil {
		t.Fatalf("exporter did not shut down cleanly: %v", err)
	}

	// ledger-era.json holds 13628 tokens (220+9 haiku, 24+235+12120+1020
	// opus-4-5) of its own thread: without the state they would be lost.
	if err := os.Remove(filepath.Join(dir, "ledger-era.json")); err != nil {
		t.Fatal(err)
	}
	e = startExporter(t, opts)
	mfs = e.metrics(t)
	if got, _ := value(mfs, "amp_tokens_total", nil); got != tokens {
		t.Errorf("sum(amp_tokens_total) = %g after restart without ledger-era.json, want %g as before", got, tokens)
	}
	if got, _ := value(mfs, "amp_threads", nil); got != threads-1 {
		t.Errorf("sum(amp_threads) = %g after deleting one thread, want %g", got, threads-1)
	}
	if err := e.stop(); err != nil {
		t.Fatalf("exporter did not shut down cleanly: %v", err)
	}

	state := filepath.Join(storage, "state.log")
	if _, err := os.Stat(state); err != nil {
		t.Fatalf("no state file after a clean shutdown: %v", err)
	}
	if err := os.WriteFile(state, []byte(`{"version":1,`), 0o644); err != nil {
		t.Fatal(err)
	}
	e = startExporter(t, opts) // must start despite the damage
	if out := e.output.String(); !strings.Contains(out, "damaged") {
		t.Errorf("no log line mentions the damaged state file; output:\n%s", out)
	}
	aside, err := filepath.Glob(state + ".damaged-*")
	if err != nil || len(aside) != 1 {
		t.Errorf("want one %s.damaged-* file, found %v (%v)", filepath.Base(state), aside, err)
	}
	if got := mustValue(t, e.metrics(t), "amp_exporter_state_errors_total", map[string]string{"operation": "load"}); got != 1 {
		t.Errorf(`amp_exporter_state_errors_total{operation="load"} = %g, want 1`, got)
	}
}

// TestReloadKeepsOldConfigWhenBad checks POST /-/reload and SIGHUP: a bad
// file is refused with a message naming the key and the file, the previous
// configuration keeps running, and a good file takes effect.
func TestReloadKeepsOldConfigWhenBad(t *testing.T) {
	dirA, dirB := t.TempDir(), t.TempDir()
	copyFixtures(t, dirA, "usage-era.json")        // claude-opus-4-6 output 825
	copyFixtures(t, dirB, "openai-streaming.json") // gpt-5.2-codex output 455
	cfg := filepath.Join(t.TempDir(), "amp-exporter.yml")
	writeConfig := func(s string) {
		t.Helper()
		if err := os.WriteFile(cfg, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	writeConfig(fmt.Sprintf("threads: {dirs: [%q]}\n", dirA))
	e := startExporter(t, exporterOpts{args: []string{"--config.file=" + cfg}})
	opusOut := map[string]string{"model": "claude-opus-4-6", "token_type": "output"}
	codexOut := map[string]string{"model": "gpt-5.2-codex", "token_type": "output"}
	mfs := e.metrics(t)
	if got := mustValue(t, mfs, "amp_tokens_total", opusOut); got != 825 {
		t.Fatalf("usage-era output tokens = %g, want 825", got)
	}
	if got := mustValue(t, mfs, "amp_exporter_config_last_reload_successful", nil); got != 1 {
		t.Fatalf("amp_exporter_config_last_reload_successful = %g at start, want 1", got)
	}

	if code, body, err := e.get("/-/reload"); err != nil || code != http.StatusMethodNotAllowed {
		t.Errorf("GET /-/reload: %d %q %v, want 405", code, body, err)
	}

	writeConfig("threads: {dirz: [x]}\n")
	code, body, err := e.do(http.MethodPost, "/-/reload")
	if err != nil {
		t.Fatal(err)
	}
	if code != http.StatusInternalServerError || !strings.Contains(body, "dirz") || !strings.Contains(body, cfg) {
		t.Errorf("POST /-/reload with an unknown key: HTTP %d %q, want 500 naming \"dirz\" and %s", code, body, cfg)
	}
	mfs = e.metrics(t)
	if got := mustValue(t, mfs, "amp_exporter_config_last_reload_successful", nil); got != 0 {
		t.Errorf("amp_exporter_config_last_reload_successful = %g after a bad reload, want 0", got)
	}
	if got := mustValue(t, mfs, "amp_tokens_total", opusOut); got != 825 {
		t.Errorf("usage-era output tokens = %g after a bad reload, want 825", got)
	}
	// The old directory is still watched: a new thread there shows up.
	writeThreadLikeAmp(t, dirA, "T-0e2e0000-0000-7000-8000-00000000000a.json",
		threadJSON("T-0e2e0000-0000-7000-8000-00000000000a", "e2e-old-dir", 1, 5))
	e.waitFor(t, 5*time.Second, "new thread in the old directory", func(mfs map[string]*dto.MetricFamily) (bool, string) {
		v, n := value(mfs, "amp_tokens_total", map[string]string{"model": "e2e-old-dir", "token_type": "output"})
		return n == 1 && v == 5, fmt.Sprintf("%d series, value %g", n, v)
	})

	writeConfig(fmt.Sprintf("threads: {dirs: [%q]}\n", dirB))
	if err := e.cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	e.waitFor(t, 10*time.Second, "reload by SIGHUP", func(mfs map[string]*dto.MetricFamily) (bool, string) {
		ok, _ := value(mfs, "amp_exporter_config_last_reload_successful", nil)
		v, n := value(mfs, "amp_tokens_total", codexOut)
		return ok == 1 && n == 1 && v == 455,
			fmt.Sprintf("reload_successful %g, gpt-5.2-codex output %g (%d series)", ok, v, n)
	})
	mfs = e.metrics(t)
	if got, _ := value(mfs, "amp_threads", nil); got != 1 {
		t.Errorf("sum(amp_threads) = %g after switching to the second directory, want 1", got)
	}
	if got := mustValue(t, mfs, "amp_tokens_total", opusOut); got != 825 {
		t.Errorf("usage-era output tokens = %g after its directory was dropped, want 825 (tokens spent stay spent)", got)
	}
}

// TestBasicAuthWebConfig checks --web.config.file basic auth on /metrics.
func TestBasicAuthWebConfig(t *testing.T) {
	const user, pass = "e2e", "correct horse battery staple"
	hash, err := bcrypt.GenerateFromPassword([]byte(pass), bcrypt.MinCost)
	if err != nil {
		t.Fatal(err)
	}
	webCfg := filepath.Join(t.TempDir(), "web.yml")
	if err := os.WriteFile(webCfg, []byte(fmt.Sprintf("basic_auth_users:\n  %s: %q\n", user, hash)), 0o600); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	copyFixtures(t, dir, "empty-ledger.json")
	e := startExporter(t, exporterOpts{threadsDir: dir, args: []string{"--web.config.file=" + webCfg}, user: user, pass: pass})

	anon := *e
	anon.user, anon.pass = "", ""
	if code, _, err := anon.get("/metrics"); err != nil || code != http.StatusUnauthorized {
		t.Errorf("GET /metrics without credentials: %d %v, want 401", code, err)
	}
	wrong := *e
	wrong.pass = "wrong"
	if code, _, err := wrong.get("/metrics"); err != nil || code != http.StatusUnauthorized {
		t.Errorf("GET /metrics with a wrong password: %d %v, want 401", code, err)
	}
	code, body, err := e.get("/metrics")
	if err != nil || code != http.StatusOK {
		t.Fatalf("GET /metrics with credentials: %d %v, want 200", code, err)
	}
	if !strings.Contains(body, `amp_tokens_total{model="claude-sonnet-4-5-20250929",source="threads",token_type="output"} 7`) {
		t.Errorf("authenticated /metrics lacks empty-ledger's tokens:\n%s", body)
	}
}
