//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"gopkg.in/yaml.v3"

	ws "github.com/amp-exporter/amp-exporter/internal/testsupport/workspacetest"
)

// panelQuery is one line of dashboards/queries.txt.
type panelQuery struct{ uid, title, expr string }

func readPanelQueries(t *testing.T) []panelQuery {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(repoRoot, "dashboards", "queries.txt"))
	if err != nil {
		t.Fatalf("dashboards/queries.txt (written by go -C dashboards/gen run . -out ..): %v", err)
	}
	var out []panelQuery
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		parts := strings.SplitN(line, "\t", 3)
		if len(parts) != 3 {
			t.Fatalf("queries.txt: bad line %q", line)
		}
		out = append(out, panelQuery{parts[0], parts[1], parts[2]})
	}
	if len(out) < 20 {
		t.Fatalf("only %d panel queries", len(out))
	}
	return out
}

// instantiate replaces the dashboards' Grafana variables the way Grafana
// would for "all" selections over a 15-minute range.
func instantiate(expr string) string {
	r := strings.NewReplacer(
		"$__rate_interval", "1m", "${__rate_interval}", "1m",
		"$__range", "15m", "${__range}", "15m",
		"$__interval", "15s", "${__interval}", "15s",
		"$job", ".*", "${job}", ".*",
		"$instance", ".*", "${instance}", ".*",
		"$user", ".*", "${user}", ".*",
		"$host", ".*", "${host}", ".*",
		"$upstream", ".*", "${upstream}", ".*",
		"$model", ".*", "${model}", ".*",
		"$source", ".*", "${source}", ".*",
	)
	return r.Replace(expr)
}

// repositoryPanels are the overview's panels whose series are per
// repository and whose data the edit threads make (the Amp server
// stand-in's billed threads have no remote: the table's billed column is
// checked for data only).
var repositoryPanels = map[string]bool{
	"Top repositories by spend":         true,
	"Top repositories by lines changed": true,
	"Spend by repository":               true,
	"USD per 100 lines changed":         true,
	"USD per commit":                    true,
	"USD per pull request":              true,
}

// dashRepositories are the values dashRemotes give: every form of a remote
// one value.
var dashRepositories = []string{"github.com/acme/web", "github.com/acme/api"}

// checkRepositoryPanels: the per-repository panels show each repository
// the edit threads ran in, under one value per repository, with spend or
// lines above zero.
func checkRepositoryPanels(t *testing.T, p *prometheus, queries []panelQuery) {
	t.Helper()
	seen := 0
	for _, q := range queries {
		if q.uid != "amp-overview" || !repositoryPanels[q.title] || strings.Contains(q.expr, "amp_billed_cost_usd_total") {
			continue
		}
		seen++
		got, err := p.query(instantiate(q.expr), "repository")
		if err != nil {
			t.Errorf("%q: %v", q.title, err)
			continue
		}
		for _, repo := range dashRepositories {
			if got[repo] <= 0 {
				t.Errorf("%q shows %v for repository %s (all: %v): %s", q.title, got[repo], repo, got, q.expr)
			}
		}
		for repo := range got {
			if strings.Contains(repo, "acme/web") && repo != "github.com/acme/web" {
				t.Errorf("%q: a second value %q for github.com/acme/web", q.title, repo)
			}
		}
	}
	if seen < 6 {
		t.Errorf("only %d per-repository panel queries checked", seen)
	}
}

// dashRemotes are the git remotes of the threads the dashboards test
// writes: two repositories, one written in two forms.
var dashRemotes = []string{"https://github.com/acme/web.git", "git@github.com:acme/api.git", "ssh://git@github.com/acme/web"}

// editThreadJSON is a thread in a git checkout whose one assistant message
// creates a file of three lines (create_file) and replaces two lines by
// one (edit_file), and commits and opens a pull request in one shell call
// (Bash), all done, with the given output tokens.
func editThreadJSON(id, remote string, outputTokens int) []byte {
	return []byte(fmt.Sprintf(`{
  "v": 1,
  "id": %[1]q,
  "created": 1780000000000,
  "agentMode": "smart",
  "env": {"initial": {"trees": [{"displayName": "w", "uri": "file:///w", "repository": {"type": "git", "url": %[2]q, "ref": "refs/heads/main"}}]}},
  "messages": [
    {"role": "user", "messageId": 0, "content": [{"type": "text", "text": "add notes"}], "meta": {"sentAt": 1780000001000}},
    {"role": "assistant", "messageId": 1,
     "content": [{"type": "tool_use", "complete": true, "id": "toolu_%[1]s_c", "name": "create_file", "input": {"path": "NOTES.md", "content": "a\nb\nc\n"}},
                 {"type": "tool_use", "complete": true, "id": "toolu_%[1]s_e", "name": "edit_file", "input": {"path": "main.go", "old_str": "x\ny", "new_str": "z"}},
                 {"type": "tool_use", "complete": true, "id": "toolu_%[1]s_b", "name": "Bash", "input": {"cmd": "git add -A && git commit -m \"Add notes\" && gh pr create --fill"}}],
     "state": {"type": "complete", "stopReason": "tool_use"},
     "usage": {"model": "claude-opus-4-6", "maxInputTokens": 200000, "inputTokens": 10, "outputTokens": %[3]d,
               "cacheCreationInputTokens": 0, "cacheReadInputTokens": 0, "totalInputTokens": 10}},
    {"role": "user", "messageId": 2,
     "content": [{"type": "tool_result", "toolUseID": "toolu_%[1]s_c", "run": {"status": "done", "result": "ok"}},
                 {"type": "tool_result", "toolUseID": "toolu_%[1]s_e", "run": {"status": "done", "result": {"diff": "-x\n-y\n+z"}}},
                 {"type": "tool_result", "toolUseID": "toolu_%[1]s_b", "run": {"status": "done", "result": {"output": "[main 1a2b3c4] Add notes\n 2 files changed, 4 insertions(+), 2 deletions(-)\n\nCreating pull request for notes into main in acme/web\n\nhttps://github.com/acme/web/pull/123\n", "exitCode": 0}}}]}
  ]
}
`, id, remote, outputTokens))
}

type ruleFile struct {
	Groups []struct {
		Name  string `yaml:"name"`
		Rules []struct {
			Record string `yaml:"record"`
			Alert  string `yaml:"alert"`
			Expr   string `yaml:"expr"`
		} `yaml:"rules"`
	} `yaml:"groups"`
}

// TestDashboardsAndRulesAgainstPrometheus feeds the exporter its sources —
// thread files, stream-json runs, an Amy stand-in, the Amp server and
// workspace stand-ins, each growing every second — while a real
// Prometheus scrapes it with the shipped rules loaded, then runs every
// dashboard panel query and every rule expression: none may fail, and
// every panel must show data.
func TestDashboardsAndRulesAgainstPrometheus(t *testing.T) {
	const key = "sk-amy-dash-0123"
	standIn := newAmyStandIn(key, "turn_a")
	amySrv := httptest.NewServer(standIn)
	defer amySrv.Close()
	// A remote-write receiver that accepts everything, so the health
	// dashboard's remote-write panels have data.
	rwSrv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.WriteHeader(http.StatusNoContent)
	}))
	defer rwSrv.Close()
	ampSrv := newAmpServerStandIn(t) // ampserver_test.go
	// A small workspace whose today grows, so that the workspace row's
	// panels have spend, lines and both views of the rollup to show.
	wsSrv := newWorkspaceStandIn(t, smallWorkspace, ws.Options{}) // workspace_test.go

	threads, runs, dir := t.TempDir(), t.TempDir(), t.TempDir()
	copyFixtures(t, threads)
	keyFile := filepath.Join(dir, "amy.key")
	os.WriteFile(keyFile, []byte(key), 0o600)
	proxyPort := freePort(t)
	cfg := filepath.Join(dir, "amp-exporter.yml")
	os.WriteFile(cfg, []byte(fmt.Sprintf(`threads: {dirs: [%q]}
streams: {dirs: [%q], poll_interval: 200ms}
amy:
  - name: stand-in
    base_url: %s
    api_key_file: %s
    turns: [turn_a]
    proxy: {listen_address: "127.0.0.1:%d"}
remote_write:
  - {url: %s, interval: 1s, external_labels: {host: dash-test}}
`, threads, runs, amySrv.URL, keyFile, proxyPort, rwSrv.URL)), 0o644)
	os.WriteFile(cfg, append(mustRead(t, cfg), "amp_server: {sync_interval: 1s}\n"...), 0o644)
	wsSecret := filepath.Join(dir, "workspace.secret")
	os.WriteFile(wsSecret, []byte(ws.ClientSecret), 0o600)
	os.WriteFile(cfg, append(mustRead(t, cfg), fmt.Sprintf(`amp_workspace:
  enabled: true
  api_url: %q
  token_url: %q
  client_id: %q
  client_secret_file: %q
  max_requests_per_minute: 6000
  sync_interval: 10s
`, wsSrv.URL, wsSrv.TokenURL(), ws.ClientID, wsSecret)...), 0o644)
	e := startExporter(t, exporterOpts{args: []string{"--config.file=" + cfg},
		env: []string{"AMP_API_KEY=" + standinKey, "AMP_URL=" + ampSrv.URL}})
	rules := filepath.Join(repoRoot, "deploy", "rules", "amp-exporter.rules.yml")
	p := startPrometheusWith(t, strings.TrimPrefix(e.base, "http://"), "amp-exporter", rules)

	// Keep every source busy while Prometheus scrapes, so rates and
	// quantiles over the last minute have something to show.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		capture := readCapture(t, "success-run.jsonl")
		denied := readCapture(t, "approval-denied.jsonl")
		proxy := fmt.Sprintf("http://127.0.0.1:%d", proxyPort)
		for i := 0; ctx.Err() == nil; i++ {
			writeThreadLikeAmp(t, threads, fmt.Sprintf("T-e2e-%04d.json", i), threadJSON(fmt.Sprintf("T-e2e-%04d", i), "claude-opus-4-6", 1, 100+i))
			// An agent editing in a repository, so that the repository and
			// lines-changed panels have spend and lines to show.
			writeThreadLikeAmp(t, threads, fmt.Sprintf("T-e2e-edit-%04d.json", i), editThreadJSON(fmt.Sprintf("T-e2e-edit-%04d", i), dashRemotes[i%len(dashRemotes)], 100+i))
			// A thread run in fast mode (its usage names the feature, as the
			// Amp CLI writes it), so that the speed premium panel has data.
			fast := strings.Replace(string(threadJSON(fmt.Sprintf("T-e2e-fast-%04d", i), "claude-opus-4-6", 1, 100+i)), `"usage": {`, `"usage": {"features": ["fast"], `, 1)
			writeThreadLikeAmp(t, threads, fmt.Sprintf("T-e2e-fast-%04d.json", i), []byte(fast))
			// Each run its own thread id: the captures' id is also a local
			// fixture thread, which (with the server source on) would count
			// the run's tokens from the file instead.
			session := fmt.Sprintf("T-e2e-run-%04d", i)
			os.WriteFile(filepath.Join(runs, fmt.Sprintf("run-%04d.jsonl", i)), []byte(strings.ReplaceAll(capture, fixtureSession, session)), 0o644)
			os.WriteFile(filepath.Join(runs, fmt.Sprintf("denied-%04d.jsonl", i)), []byte(strings.ReplaceAll(denied, fixtureSession, session)), 0o644)
			bumpAmpServer(ampSrv, i)
			wsSrv.Grow()
			req, _ := http.NewRequest(http.MethodPost, proxy+"/v1/turns", strings.NewReader(`{}`))
			req.Header.Set("Authorization", "Bearer "+key)
			if resp, err := http.DefaultClient.Do(req); err == nil {
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
			select {
			case <-ctx.Done():
			case <-time.After(time.Second):
			}
		}
	}()

	// Wait until rates over a minute window exist for all three sources.
	deadline := time.Now().Add(90 * time.Second)
	for {
		ok := true
		for _, q := range []string{
			`sum(rate(amp_tokens_total{source="threads"}[1m])) > 0`,
			`sum(rate(amp_tokens_total{source="stream"}[1m])) > 0`,
			`sum(rate(amy_turns_finished_total[1m])) > 0`,
			`sum(rate(amp_billed_cost_usd_total[1m])) > 0`,
			`sum(rate(amp_cost_usd_total{source="workspace"}[1m])) > 0`,
			`sum(rate(amp_workspace_daily_usage_usd_total[1m])) > 0`,
			`sum(rate(amp_lines_changed_total{source="threads",repository="github.com/acme/web"}[1m])) > 0`,
			`sum(rate(amp_lines_changed_total{source="threads",repository="github.com/acme/api"}[1m])) > 0`,
			`sum(rate(amp_commits_total{source="threads",repository="github.com/acme/web"}[1m])) > 0`,
			`sum(rate(amp_pull_requests_total{source="threads",repository="github.com/acme/api"}[1m])) > 0`,
		} {
			if _, n, err := p.queryRaw(q); err != nil || n == 0 {
				ok = false
				if time.Now().After(deadline) {
					t.Logf("no data yet: %s %v", q, err)
				}
			}
		}
		if ok {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the sources never showed activity in Prometheus")
		}
		time.Sleep(time.Second)
	}

	for _, q := range readPanelQueries(t) {
		expr := instantiate(q.expr)
		typ, n, err := p.queryRaw(expr)
		switch {
		case err != nil:
			t.Errorf("%s / %q: %s: %v", q.uid, q.title, expr, err)
		case n == 0 && typ != "scalar":
			t.Errorf("%s / %q shows no data: %s", q.uid, q.title, expr)
		}
	}

	checkRepositoryPanels(t, p, readPanelQueries(t))
	// The chargeback recording rules, as Prometheus evaluates them.
	for _, rule := range []string{
		"amp:spend_usd_by_repository:increase1d",
		"sum by (repository) (amp:lines_changed_by_repository:increase1d)",
		"amp:usd_per_100_lines_changed_by_repository:ratio1d",
		"amp:usd_per_commit_by_repository:ratio1d",
		"amp:usd_per_pull_request_by_repository:ratio1d",
	} {
		waitCond(t, 15*time.Second, rule+" per repository", func() (bool, string) {
			got, err := p.query(rule, "repository")
			for _, repo := range dashRepositories {
				if err != nil || got[repo] <= 0 {
					return false, fmt.Sprintf("%v (err %v)", got, err)
				}
			}
			return true, ""
		})
	}

	// Per model: the edit threads' model has a ratio, and the lines by
	// model add up to the lines (both families from the same scrape).
	waitCond(t, 15*time.Second, "amp:usd_per_100_lines_changed_by_model:ratio1d", func() (bool, string) {
		got, err := p.query("amp:usd_per_100_lines_changed_by_model:ratio1d", "model")
		return err == nil && got["claude-opus-4-6"] > 0, fmt.Sprintf("%v (err %v)", got, err)
	})
	for _, kind := range []string{"added", "removed"} {
		q := fmt.Sprintf(`sum(amp_lines_changed_by_model_total{kind=%q}) == sum(amp_lines_changed_total{kind=%q}) > 0`, kind, kind)
		if _, n, err := p.queryRaw(q); err != nil || n != 1 {
			t.Errorf("lines by model and lines (%s) not equal and above zero: %d samples of %s (err %v)", kind, n, q, err)
		}
	}
	// The same for commits and pull requests: the edit threads' model,
	// which made the shell call that committed and opened one, has both
	// ratios, and the counts by model add up to those by repository.
	for _, rule := range []string{"amp:usd_per_commit_by_model:ratio1d", "amp:usd_per_pull_request_by_model:ratio1d"} {
		waitCond(t, 15*time.Second, rule, func() (bool, string) {
			got, err := p.query(rule, "model")
			return err == nil && got["claude-opus-4-6"] > 0, fmt.Sprintf("%v (err %v)", got, err)
		})
	}
	for _, fam := range []string{"amp_commits", "amp_pull_requests"} {
		q := fmt.Sprintf(`sum(%s_by_model_total) == sum(%s_total) > 0`, fam, fam)
		if _, n, err := p.queryRaw(q); err != nil || n != 1 {
			t.Errorf("%s by model and by repository not equal and above zero: %d samples of %s (err %v)", fam, n, q, err)
		}
	}

	var rf ruleFile
	data, err := os.ReadFile(rules)
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(data, &rf); err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, g := range rf.Groups {
		for _, r := range g.Rules {
			n++
			if _, _, err := p.queryRaw(r.Expr); err != nil {
				t.Errorf("rule %s%s: %v", r.Record, r.Alert, err)
			}
		}
	}
	if n < 10 {
		t.Fatalf("only %d rules", n)
	}
	// Prometheus's own evaluation of the loaded rules: all healthy.
	resp, err := httpClient.Get(p.base + "/api/v1/rules")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var rr struct {
		Data struct {
			Groups []struct {
				Rules []struct {
					Name      string `json:"name"`
					Health    string `json:"health"`
					LastError string `json:"lastError"`
				} `json:"rules"`
			} `json:"groups"`
		} `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&rr); err != nil {
		t.Fatal(err)
	}
	loaded := 0
	for _, g := range rr.Data.Groups {
		for _, r := range g.Rules {
			loaded++
			if r.Health == "err" {
				t.Errorf("rule %s: %s", r.Name, r.LastError)
			}
		}
	}
	if loaded != n {
		t.Errorf("Prometheus loaded %d rules, the file has %d", loaded, n)
	}
}
