//go:build e2e

package e2e

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"math"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"

	ws "github.com/amp-exporter/amp-exporter/internal/testsupport/workspacetest"
	"github.com/amp-exporter/amp-exporter/parser/gitremote"
	"github.com/amp-exporter/amp-exporter/source/workspace"
)

// wsAhead is how far the stand-in's present lies ahead of the exporter's
// clock. The exporter asks for a thread's usage while its last activity
// is within 90 days of its own now; the stand-in serves it while its
// creation is within 90 days of the stand-in's now. With the stand-in a
// little ahead, every thread the stand-in serves is one the exporter asks
// for (a thread it asks for in vain is answered 404 and skipped), however
// long the test runs up to wsAhead.
const wsAhead = 5 * time.Minute

// newWorkspaceStandIn starts the workspace API stand-in of cfg, its
// present wsAhead of now.
func newWorkspaceStandIn(t *testing.T, cfg ws.Config, opts ws.Options) *ws.Server {
	t.Helper()
	cfg.Now = time.Now().UTC().Add(wsAhead)
	s := ws.New(cfg, opts)
	t.Cleanup(s.Close)
	return s
}

// workspaceConfig writes a configuration that turns the workspace source
// on against s with the client secret in a file, and returns its path.
// extra is appended under amp_workspace (indented by four spaces).
func workspaceConfig(t *testing.T, s *ws.Server, auth string, extra ...string) string {
	t.Helper()
	dir := t.TempDir()
	secret := filepath.Join(dir, "client-secret")
	if err := os.WriteFile(secret, []byte(ws.ClientSecret+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := fmt.Sprintf(`amp_workspace:
  enabled: true
  api_url: %q
  token_url: %q
  client_id: %q
  client_secret_file: %q
  client_auth: %s
  max_requests_per_minute: 6000
  sync_interval: 10s
`, s.URL, s.TokenURL(), ws.ClientID, secret, auth)
	for _, x := range extra {
		cfg += "  " + x + "\n"
	}
	path := filepath.Join(dir, "amp-exporter.yml")
	if err := os.WriteFile(path, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// wsView is what the exporter shows of the workspace, or what it should:
// per family, the values keyed by their labels ("user/model/token_type"
// and so on), zero values left out.
type wsView map[string]map[string]float64

// The families of wsView, each a PromQL sum and the labels it keeps.
var wsFamilies = []struct {
	name, metric, filter string
	by                   []string
}{
	{"tokens", "amp_tokens_total", `source="workspace"`, []string{"user", "model", "token_type"}},
	{"usd", "amp_cost_usd_total", `source="workspace"`, []string{"user", "model"}},
	{"repository", "amp_cost_usd_total", `source="workspace"`, []string{"repository"}},
	{"billed", "amp_billed_cost_usd_total", `source="workspace"`, nil},
	{"daily", "amp_workspace_daily_usage_usd_total", "", []string{"user", "model"}},
	{"lines", "amp_workspace_lines_total", "", []string{"user", "kind"}},
}

// wsTruth is the stand-in's truth as a wsView: the thread view
// (ThreadTotals of the threads still served) for the live families, the
// rollup for the daily ones.
func wsTruth(s *ws.Server) wsView {
	v := wsView{}
	for _, f := range wsFamilies {
		v[f.name] = map[string]float64{}
	}
	add := func(fam, key string, x float64) {
		if x != 0 {
			v[fam][key] += x
		}
	}
	tt := s.ThreadTotals(true)
	for k, u := range tt.ByUserModel {
		p := k.User + "/" + k.Model + "/"
		add("tokens", p+"input", float64(u.InputTokens))
		add("tokens", p+"output", float64(u.OutputTokens))
		add("tokens", p+"cache_read", float64(u.CacheReadInputTokens))
		add("tokens", p+"cache_creation", float64(u.CacheCreationInputTokens))
		add("usd", k.User+"/"+k.Model, u.USD())
	}
	for raw, u := range tt.ByRepository {
		repo := ""
		if raw != "" {
			repo, _ = gitremote.Normalize(raw)
		}
		add("repository", repo, u.USD())
	}
	add("billed", "", tt.Total.USD())
	ro := s.Rollup()
	for k, u := range ro.ByDay {
		add("daily", k.User+"/"+k.Model, u.USD())
	}
	for k, d := range ro.UserDay {
		add("lines", k.User+"/added", float64(d.LinesAdded))
		add("lines", k.User+"/deleted", float64(d.LinesDeleted))
		add("lines", k.User+"/modified", float64(d.LinesModified))
	}
	return v
}

// wsScraped is the exporter's /metrics as a wsView.
func wsScraped(mfs map[string]*dto.MetricFamily) wsView {
	v := wsView{}
	for _, f := range wsFamilies {
		out := map[string]float64{}
		v[f.name] = out
		mf := mfs[f.metric]
		if mf == nil {
			continue
		}
		for _, m := range mf.GetMetric() {
			have := map[string]string{}
			for _, lp := range m.GetLabel() {
				have[lp.GetName()] = lp.GetValue()
			}
			if f.filter != "" && have["source"] != "workspace" {
				continue
			}
			parts := make([]string, len(f.by))
			for i, l := range f.by {
				parts[i] = have[l]
			}
			out[strings.Join(parts, "/")] += m.GetCounter().GetValue()
		}
		for k, x := range out {
			if x == 0 {
				delete(out, k)
			}
		}
	}
	return v
}

// wsQueried is the same view read from Prometheus.
func wsQueried(p *prometheus) (wsView, error) {
	v := wsView{}
	for _, f := range wsFamilies {
		sel := f.metric + `{job="amp"`
		if f.filter != "" {
			sel += "," + f.filter
		}
		sel += "}"
		q := "sum(" + sel + ")"
		if len(f.by) > 0 {
			q = "sum by (" + strings.Join(f.by, ", ") + ") (" + sel + ")"
		}
		got, err := p.queryBy(q, f.by...)
		if err != nil {
			return nil, err
		}
		for k, x := range got {
			if x == 0 {
				delete(got, k)
			}
		}
		v[f.name] = got
	}
	return v, nil
}

// diff says how two views differ ("" when they are equal), a few keys
// per family.
func (v wsView) diff(want wsView) string {
	var out []string
	for _, f := range wsFamilies {
		if _, ok := want[f.name]; !ok {
			continue
		}
		got, exp := v[f.name], want[f.name]
		keys := map[string]bool{}
		for k := range got {
			keys[k] = true
		}
		for k := range exp {
			keys[k] = true
		}
		var bad []string
		for k := range keys {
			g, gok := got[k]
			e, eok := exp[k]
			if g != e || gok != eok {
				bad = append(bad, fmt.Sprintf("%s{%s}=%v want %v", f.name, k, g, e))
			}
		}
		sort.Strings(bad)
		if len(bad) > 3 {
			bad = append(bad[:3], fmt.Sprintf("and %d more", len(bad)-3))
		}
		out = append(out, bad...)
	}
	return strings.Join(out, "; ")
}

// queryBy runs an instant query and keys its vector by the values of
// labels joined with "/".
func (p *prometheus) queryBy(q string, labels ...string) (map[string]float64, error) {
	resp, err := httpClient.Get(p.base + "/api/v1/query?query=" + url.QueryEscape(q))
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var r struct {
		Status string `json:"status"`
		Error  string `json:"error"`
		Data   struct {
			Result []struct {
				Metric map[string]string `json:"metric"`
				Value  [2]any            `json:"value"`
			} `json:"result"`
		} `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&r); err != nil {
		return nil, fmt.Errorf("decode answer (HTTP %d): %w", resp.StatusCode, err)
	}
	if r.Status != "success" {
		return nil, fmt.Errorf("query %s: %s", q, r.Error)
	}
	out := map[string]float64{}
	for _, s := range r.Data.Result {
		parts := make([]string, len(labels))
		for i, l := range labels {
			parts[i] = s.Metric[l]
		}
		k := strings.Join(parts, "/")
		if _, dup := out[k]; dup {
			return nil, fmt.Errorf("query %s: two series keyed %q", q, k)
		}
		str, _ := s.Value[1].(string)
		x, err := strconv.ParseFloat(str, 64)
		if err != nil {
			return nil, fmt.Errorf("query %s: bad sample %v", q, s.Value)
		}
		out[k] = x
	}
	return out, nil
}

// waitQueried polls Prometheus until it shows want, for at most d.
func (p *prometheus) waitQueried(t *testing.T, d time.Duration, what string, want wsView) {
	t.Helper()
	deadline := time.Now().Add(d)
	for {
		got, err := wsQueried(p)
		last := fmt.Sprint(err)
		if err == nil {
			if last = got.diff(want); last == "" {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("Prometheus, %s: not the stand-in's truth within %s: %s", what, d, last)
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// waitTruth polls the exporter until its /metrics show the stand-in's
// truth and a sync ended after after (a Unix time in seconds); it
// returns the end of that sync.
func (e *exporter) waitTruth(t *testing.T, d time.Duration, what string, s *ws.Server, after float64) float64 {
	t.Helper()
	return e.waitView(t, d, what, func() wsView { return wsTruth(s) }, after)
}

// waitView is waitTruth with the expected view made by want (at each
// poll, as the stand-in may move).
func (e *exporter) waitView(t *testing.T, d time.Duration, what string, want func() wsView, after float64) float64 {
	t.Helper()
	var synced float64
	e.waitFor(t, d, what, func(mfs map[string]*dto.MetricFamily) (bool, string) {
		up, _ := value(mfs, "amp_workspace_up", nil)
		synced, _ = value(mfs, "amp_workspace_last_sync_timestamp_seconds", nil)
		if up != 1 || synced <= after {
			return false, fmt.Sprintf("up %v, last sync %v (want after %v)", up, synced, after)
		}
		w := want()
		if diff := wsScraped(mfs).only(w).diff(w); diff != "" {
			return false, diff
		}
		return true, ""
	})
	return synced
}

// only is v with the families of want only.
func (v wsView) only(want wsView) wsView {
	out := wsView{}
	for k := range want {
		out[k] = v[k]
	}
	return out
}

// waitSync waits for a sync that ends after after and returns its end.
func (e *exporter) waitSync(t *testing.T, d time.Duration, after float64) float64 {
	t.Helper()
	var synced float64
	e.waitFor(t, d, "a sync", func(mfs map[string]*dto.MetricFamily) (bool, string) {
		synced, _ = value(mfs, "amp_workspace_last_sync_timestamp_seconds", nil)
		return synced > after, fmt.Sprintf("last sync %v, want after %v", synced, after)
	})
	return synced
}

// killHard ends the exporter with SIGKILL, as a crash or an OOM kill
// does: no ordered stop, no final save.
func (e *exporter) killHard(t *testing.T) {
	t.Helper()
	if err := e.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	<-e.done
	e.err = nil // killed on purpose: not a failed stop
}

// stateStamp is the workspace state file's modification time (zero when
// there is none).
func stateStamp(dir string) time.Time {
	fi, err := os.Stat(filepath.Join(dir, "workspace.json.gz"))
	if err != nil {
		return time.Time{}
	}
	return fi.ModTime()
}

// wsReportDay is one day of `report daily --json`.
type wsReportDay struct {
	Date                string  `json:"date"`
	InputTokens         int64   `json:"inputTokens"`
	OutputTokens        int64   `json:"outputTokens"`
	CacheReadTokens     int64   `json:"cacheReadTokens"`
	CacheCreationTokens int64   `json:"cacheCreationTokens"`
	TotalCost           float64 `json:"totalCost"`
	ModelBreakdowns     []struct {
		ModelName           string  `json:"modelName"`
		InputTokens         int64   `json:"inputTokens"`
		OutputTokens        int64   `json:"outputTokens"`
		CacheReadTokens     int64   `json:"cacheReadTokens"`
		CacheCreationTokens int64   `json:"cacheCreationTokens"`
		Cost                float64 `json:"cost"`
	} `json:"modelBreakdowns"`
}

// ledgerUSD is the usage ledger's resolution in dollars: each entry (a
// day, member and model) is kept to it, so a sum of n entries is within
// n of it of the rollup's exact dollars.
const ledgerUSD = 1e-10

// checkReport holds `report daily --json --exporter` to the rollup, per
// day and per day and model: tokens exactly, dollars to the ledger's
// resolution per entry summed.
func checkReport(t *testing.T, e *exporter, s *ws.Server) {
	t.Helper()
	cmd := exec.Command(exporterBin, "report", "daily", "--json", "--timezone", "UTC", "--exporter", e.base)
	cmd.Env = []string{"HOME=" + t.TempDir(), "PATH=/usr/bin:/bin", "TZ=UTC", "XDG_DATA_HOME=" + t.TempDir()}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("report: %v\n%s", err, stderr.String())
	}
	var rep struct {
		Daily []wsReportDay `json:"daily"`
	}
	if err := json.Unmarshal(out, &rep); err != nil {
		t.Fatalf("report JSON: %v\n%s", err, out)
	}
	type sums struct {
		u ws.Usage
		n int
	}
	wantDay := map[string]*sums{}
	wantModel := map[string]*sums{}
	for k, u := range s.Rollup().ByDay {
		for key, m := range map[string]map[string]*sums{k.Day: wantDay, k.Day + "/" + k.Model: wantModel} {
			if m[key] == nil {
				m[key] = &sums{}
			}
			m[key].u.Add(u)
			m[key].n++
		}
	}
	same := func(what string, in, out, read, creation int64, usd float64, want *sums) {
		t.Helper()
		if want == nil {
			t.Errorf("report %s: not in the rollup", what)
			return
		}
		w := want.u
		if in != w.InputTokens || out != w.OutputTokens || read != w.CacheReadInputTokens || creation != w.CacheCreationInputTokens {
			t.Errorf("report %s: tokens %d/%d/%d/%d, the rollup %d/%d/%d/%d", what, in, out, read, creation,
				w.InputTokens, w.OutputTokens, w.CacheReadInputTokens, w.CacheCreationInputTokens)
		}
		if math.Abs(usd-w.USD()) > float64(want.n)*ledgerUSD {
			t.Errorf("report %s: %v USD, the rollup %v", what, usd, w.USD())
		}
	}
	days := 0
	for _, d := range rep.Daily {
		if d.InputTokens+d.OutputTokens+d.CacheReadTokens+d.CacheCreationTokens == 0 && d.TotalCost == 0 {
			continue
		}
		days++
		same(d.Date, d.InputTokens, d.OutputTokens, d.CacheReadTokens, d.CacheCreationTokens, d.TotalCost, wantDay[d.Date])
		for _, m := range d.ModelBreakdowns {
			same(d.Date+"/"+m.ModelName, m.InputTokens, m.OutputTokens, m.CacheReadTokens, m.CacheCreationTokens, m.Cost, wantModel[d.Date+"/"+m.ModelName])
		}
	}
	if days != len(wantDay) {
		t.Errorf("report: %d days with usage, the rollup %d", days, len(wantDay))
	}
}

// checkReportTable holds the table of `report daily --exporter` to the
// rollup per day: each day's tokens by type exactly and its dollars to
// the cent the table shows.
func checkReportTable(t *testing.T, e *exporter, s *ws.Server) {
	t.Helper()
	cmd := exec.Command(exporterBin, "report", "daily", "--no-color", "--timezone", "UTC", "--exporter", e.base)
	cmd.Env = []string{"HOME=" + t.TempDir(), "PATH=/usr/bin:/bin", "TZ=UTC", "XDG_DATA_HOME=" + t.TempDir()}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("report: %v\n%s", err, stderr.String())
	}
	want := map[string]ws.Usage{}
	for k, u := range s.Rollup().ByDay {
		w := want[k.Day]
		w.Add(u)
		want[k.Day] = w
	}
	num := func(c string) int64 {
		n, err := strconv.ParseInt(strings.ReplaceAll(c, ",", ""), 10, 64)
		if err != nil {
			t.Fatalf("report table: %q is not a count", c)
		}
		return n
	}
	rows := 0
	for _, line := range strings.Split(string(out), "\n") {
		cells := strings.Fields(line)
		if len(cells) < 9 || len(cells[0]) != len("2006-01-02") || cells[0][4] != '-' {
			continue
		}
		w, ok := want[cells[0]]
		if !ok {
			t.Errorf("report table: a row for %s, a day the rollup does not have", cells[0])
			continue
		}
		rows++
		// date, "-", model, input, output, cache create, cache read,
		// total, credits, cost, then columns after the cost (commits):
		// the seven read here end at the cost, the last "$" cell.
		cost := -1
		for i, c := range cells {
			if strings.HasPrefix(c, "$") {
				cost = i
			}
		}
		if cost < 6 {
			t.Errorf("report table: no cost in %q", line)
			continue
		}
		c := cells[cost-6 : cost+1]
		if num(c[0]) != w.InputTokens || num(c[1]) != w.OutputTokens || num(c[2]) != w.CacheCreationInputTokens || num(c[3]) != w.CacheReadInputTokens {
			t.Errorf("report table %s: %v, the rollup %+v", cells[0], c, w)
		}
		usd, err := strconv.ParseFloat(strings.TrimPrefix(c[6], "$"), 64)
		if err != nil || math.Abs(usd-w.USD()) > 0.005+1e-9 {
			t.Errorf("report table %s: %s, the rollup %.4f USD", cells[0], c[6], w.USD())
		}
	}
	if rows != len(want) || rows == 0 {
		t.Errorf("report table: %d day rows, the rollup has %d days:\n%s", rows, len(want), out)
	}
}

// secretsIn says which of the workspace's secrets text holds: the client
// secret, a token the stand-in issued, the token in a remote.
func secretsIn(text string) []string {
	var out []string
	for name, s := range map[string]string{"client secret": ws.ClientSecret, "remote's token": ws.RemoteSecret, "access token": "wsat_"} {
		if strings.Contains(text, s) {
			out = append(out, name)
		}
	}
	sort.Strings(out)
	return out
}

// checkNoSecrets looks for the secrets in what the exporter shows (its
// /metrics, /config, landing page), in logs and in every file of the
// storage directory (decompressed where gzipped).
func checkNoSecrets(t *testing.T, e *exporter, storage string, logs ...string) {
	t.Helper()
	texts := map[string]string{}
	for _, path := range []string{"/metrics", "/config", "/"} {
		code, body, err := e.get(path)
		if err != nil || code != 200 {
			t.Fatalf("GET %s: %d %v", path, code, err)
		}
		texts[path] = body
	}
	for i, l := range logs {
		texts[fmt.Sprintf("log %d", i+1)] = l
	}
	files := 0
	err := filepath.WalkDir(storage, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if zr, err := gzip.NewReader(bytes.NewReader(b)); err == nil {
			if plain, err := io.ReadAll(zr); err == nil {
				b = plain
			}
		}
		files++
		texts[path] = string(b)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := texts[filepath.Join(storage, "workspace.json.gz")]; !ok {
		t.Fatalf("no workspace state in %s (%d files): the check would prove nothing", storage, files)
	}
	if !strings.Contains(texts["/config"], "amp_workspace") || !strings.Contains(texts["/metrics"], `source="workspace"`) {
		t.Fatal("/config without amp_workspace or /metrics without the workspace: the check would prove nothing")
	}
	for where, text := range texts {
		if found := secretsIn(text); len(found) > 0 {
			t.Errorf("%v in %s", found, where)
		}
	}
}

// checkFleetRules: the recording rules of the per-user and per-repository
// totals (user:amp_cost_usd_total:fleet, which the budgets' and the
// dashboards' per-user rules build on) give the workspace's truth per
// member and per repository.
func checkFleetRules(t *testing.T, p *prometheus, want wsView) {
	t.Helper()
	perUser := map[string]float64{}
	for k, v := range want["usd"] {
		user, _, _ := strings.Cut(k, "/")
		perUser[user] += v
	}
	for _, c := range []struct {
		q    string
		by   string
		want map[string]float64
	}{
		{`sum by (user) (user:amp_cost_usd_total:fleet{source="workspace"})`, "user", perUser},
		{`sum by (repository) (user:amp_cost_usd_total:fleet{source="workspace"})`, "repository", want["repository"]},
	} {
		var got map[string]float64
		var err error
		deadline := time.Now().Add(15 * time.Second)
		for {
			got, err = p.queryBy(c.q, c.by)
			if err == nil && equalVectors(got, c.want) {
				break
			}
			if time.Now().After(deadline) {
				t.Errorf("%s: %v (%v), want %s", c.q, formatVector(got), err, formatVector(c.want))
				break
			}
			time.Sleep(250 * time.Millisecond)
		}
	}
}

// TestWorkspaceSource runs the exporter on the workspace stand-in the
// issue describes (50 members, 2,000 main threads over 120 days with
// sub-threads, five repositories one of whose remotes holds a token, two
// models a member) with a real Prometheus scraping it: per member and
// model the tokens by type and Amp's dollars, per repository, the
// threads' bills, the rollup's dollars and lines equal the stand-in's
// truth exactly; `report` equals the rollup per day; a sync where nothing
// changed fetches no usage, a growing day only the threads that grew; a
// kill -9 and a restart with --storage.path fetch nothing again and
// count nothing twice; the secrets appear nowhere.
func TestWorkspaceSource(t *testing.T) {
	start := time.Now()
	s := newWorkspaceStandIn(t, ws.Config{Seed: 36}, ws.Options{ClientAuth: ws.AuthBasic})
	truth := s.ThreadTotals(false)
	if truth.SubThreads == 0 {
		t.Fatal("the workspace has no sub-threads")
	}
	storage := t.TempDir()
	port := freePort(t)
	opts := exporterOpts{port: port, args: []string{"--config.file=" + workspaceConfig(t, s, "basic"), "--storage.path=" + storage}}
	e := startExporter(t, opts)
	// The shipped rules loaded: the per-user and per-repository totals the
	// budgets and dashboards build on take the workspace's series too.
	p := startPrometheusWith(t, strings.TrimPrefix(e.base, "http://"), "amp", filepath.Join(repoRoot, "deploy", "rules", "amp-exporter.rules.yml"))
	synced := e.waitTruth(t, 90*time.Second, "first sync", s, 0)
	if n := s.Count(ws.RouteUsage); n > truth.MainThreads {
		t.Errorf("%d usage requests for %d main threads: sub-threads were asked", n, truth.MainThreads)
	}
	rss, _ := value(e.metrics(t), "process_resident_memory_bytes", nil)
	t.Logf("first sync: %d requests (%d usage), %d bytes, %s after start; exporter RSS %.1f MB",
		len(s.Requests()), s.Count(ws.RouteUsage), s.BytesServed(), time.Since(start).Round(time.Second), rss/1e6)
	// The next sync starts sync_interval (10 s) after this one ended: the
	// request log from here on is that sync's alone.
	s.ResetRequests()
	p.waitQueried(t, 30*time.Second, "first sync", wsTruth(s))
	// Sub-threads once: every one of them is named and skipped, and the
	// totals above (sub-threads inside their parents) hold.
	mfs := e.metrics(t)
	if got := mustValue(t, mfs, "amp_workspace_threads_skipped_total", map[string]string{"reason": "sub_thread"}); got != float64(truth.SubThreads) {
		t.Errorf("sub-threads skipped %v, the workspace has %d", got, truth.SubThreads)
	}
	checkReport(t, e, s)

	// A sync where nothing changed asks for no usage.
	synced = e.waitSync(t, 30*time.Second, synced)
	if n := s.Count(ws.RouteUsage); n != 0 {
		t.Errorf("a sync where nothing changed asked for %d threads' usage", n)
	}
	t.Logf("unchanged sync: %d requests, %d bytes", len(s.Requests()), s.BytesServed())

	// Today grows: only the threads that grew are asked again.
	before := stateStamp(storage)
	s.Grow()
	s.ResetRequests()
	e.waitTruth(t, 30*time.Second, "today grown", s, synced)
	if n, want := s.Count(ws.RouteUsage), len(s.TodayThreads()); n != want {
		t.Errorf("after today grew: %d usage requests, want the %d threads that grew", n, want)
	}
	// kill -9 once that sync is saved, and again on a restart: the
	// restarted exporter shows the same totals from its state and asks
	// for no usage.
	deadline := time.Now().Add(10 * time.Second)
	for !stateStamp(storage).After(before) {
		if time.Now().After(deadline) {
			t.Fatal("the workspace state was not saved after a sync that counted")
		}
		time.Sleep(20 * time.Millisecond)
	}
	rss, _ = value(e.metrics(t), "process_resident_memory_bytes", nil)
	if fi, err := os.Stat(filepath.Join(storage, "workspace.json.gz")); err == nil {
		t.Logf("before kill -9: exporter RSS %.1f MB, workspace state %d bytes", rss/1e6, fi.Size())
	}
	e.killHard(t)
	logs := []string{e.output.String()}
	s.ResetRequests()
	e2 := startExporter(t, opts)
	e2.waitTruth(t, 30*time.Second, "after kill -9 and restart", s, 0)
	if n := s.Count(ws.RouteUsage); n != 0 {
		t.Errorf("the restart asked for %d threads' usage again, none changed", n)
	}
	p.waitQueried(t, 30*time.Second, "after restart", wsTruth(s))
	// Nothing was ever more than the truth in Prometheus, across the
	// kill and the restart.
	want := wsTruth(s)
	for q, w := range map[string]float64{
		`max_over_time(sum(amp_billed_cost_usd_total{job="amp",source="workspace"})[10m:1s])`: want["billed"][""],
		`max_over_time(sum(amp_cost_usd_total{job="amp",source="workspace"})[10m:1s])`:        want["billed"][""],
	} {
		// The subquery's last step may fall just before the newest
		// sample: it is polled until it reaches the truth, and must never
		// pass it.
		deadline := time.Now().Add(10 * time.Second)
		for {
			got, err := p.queryBy(q)
			if err == nil && got[""] > w {
				t.Errorf("%s: %v, more than the truth %v: counted twice", q, got[""], w)
				break
			}
			if err == nil && got[""] == w {
				break
			}
			if time.Now().After(deadline) {
				t.Errorf("%s: %v %v, want %v", q, got, err, w)
				break
			}
			time.Sleep(250 * time.Millisecond)
		}
	}
	checkReport(t, e2, s)
	checkReportTable(t, e2, s)
	checkFleetRules(t, p, want)
	if n := s.NonGET(); n != 0 {
		t.Errorf("%d requests other than GET reached /api/v2/", n)
	}
	checkNoSecrets(t, e2, storage, append(logs, e2.output.String())...)
}

// noRepositories is the truth as the exporter sees it without the
// repositories: every dollar under the repository "".
func noRepositories(v wsView) wsView {
	v["repository"] = map[string]float64{"": v["billed"][""]}
	return v
}

// threadView keeps the families the thread usage feeds.
func threadView(v wsView) wsView {
	delete(v, "daily")
	delete(v, "lines")
	return v
}

// smallWorkspace is the fault table's workspace: small enough that a sync
// takes a moment, with sub-threads, every repository and both models of
// each member.
var smallWorkspace = ws.Config{Seed: 7, Users: 6, Threads: 150, Days: 40}

// waitLog waits until the exporter's log holds every one of parts on one
// line and returns that line.
func (e *exporter) waitLog(t *testing.T, d time.Duration, parts ...string) string {
	t.Helper()
	deadline := time.Now().Add(d)
	for {
		for _, line := range strings.Split(e.output.String(), "\n") {
			all := true
			for _, p := range parts {
				all = all && strings.Contains(line, p)
			}
			if all {
				return line
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no log line with %q within %s:\n%s", parts, d, e.output.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestWorkspaceFaults runs the exporter against the stand-in with each of
// its switches for an open question or a fault: each ends in the
// stand-in's truth exactly (after the fault, at the next sync where the
// fault lasts one), or in a log line naming the endpoint and what is
// missing, while what could be read is counted exactly.
func TestWorkspaceFaults(t *testing.T) {
	type faultCase struct {
		name  string
		cfg   *ws.Config // the workspace (default smallWorkspace)
		opts  ws.Options
		auth  string   // client_auth (default basic)
		extra []string // more amp_workspace keys
		// setup changes the stand-in before the exporter starts.
		setup func(s *ws.Server)
		// run checks the exporter; nil: the truth after the first sync.
		run func(t *testing.T, s *ws.Server, e *exporter)
	}
	counted := func(t *testing.T, e *exporter, name string, labels map[string]string) {
		t.Helper()
		if v, _ := value(e.metrics(t), name, labels); v == 0 {
			t.Errorf("%s%v: 0, want the fault counted", name, labels)
		}
	}
	cases := []faultCase{
		{name: "429 with Retry-After in seconds", setup: func(s *ws.Server) {
			s.Fail(ws.RouteThreads, ws.Fault{Status: 429, RetryAfter: "1"})
			s.Fail(ws.RouteUsage, ws.Fault{Status: 429, RetryAfter: "1"}, ws.Fault{Status: 429, RetryAfter: "1"})
			s.Fail(ws.RouteDaily, ws.Fault{Status: 429, RetryAfter: "1"})
		}, run: func(t *testing.T, s *ws.Server, e *exporter) {
			e.waitTruth(t, 60*time.Second, "after 429s", s, 0)
			counted(t, e, "amp_workspace_requests_total", map[string]string{"endpoint": "thread_usage", "code": "429"})
		}},
		{name: "429 with Retry-After as a date", setup: func(s *ws.Server) {
			s.Fail(ws.RouteUsage, ws.Fault{Status: 429, RetryAfter: ws.RetryAfterDate(time.Now().Add(2 * time.Second))})
		}},
		{name: "429 without Retry-After", setup: func(s *ws.Server) {
			s.Fail(ws.RouteUsage, ws.Fault{Status: 429})
		}},
		{name: "5xx", setup: func(s *ws.Server) {
			s.Fail(ws.RouteThreads, ws.Fault{Status: 502})
			s.Fail(ws.RouteUsage, ws.Fault{Status: 500}, ws.Fault{Status: 503})
			s.Fail(ws.RouteDaily, ws.Fault{Status: 504})
		}, run: func(t *testing.T, s *ws.Server, e *exporter) {
			e.waitTruth(t, 60*time.Second, "after 5xx", s, 0)
			counted(t, e, "amp_workspace_requests_total", map[string]string{"endpoint": "thread_usage", "code": "503"})
		}},
		{name: "token expiring early", opts: ws.Options{TokenLifetime: time.Hour}, run: func(t *testing.T, s *ws.Server, e *exporter) {
			synced := e.waitTruth(t, 60*time.Second, "first sync", s, 0)
			s.ExpireTokens()
			s.Grow()
			e.waitTruth(t, 60*time.Second, "a sync with the token expired", s, synced)
			if n := s.TokenRequests(); n != 2 {
				t.Errorf("%d tokens fetched, want the first and one after the 401", n)
			}
		}},
		{name: "null items and unknown fields", opts: ws.Options{NullItems: true, ExtraFields: true}, run: func(t *testing.T, s *ws.Server, e *exporter) {
			e.waitTruth(t, 60*time.Second, "null items", s, 0)
			counted(t, e, "amp_workspace_unexpected_answers_total", map[string]string{"reason": "null_item"})
			counted(t, e, "amp_workspace_unexpected_answers_total", map[string]string{"reason": "unknown_field"})
		}},
		{name: "optional fields left out", opts: ws.Options{OmitOptional: true}, run: func(t *testing.T, s *ws.Server, e *exporter) {
			e.waitView(t, 60*time.Second, "optional fields left out", func() wsView { return noRepositories(wsTruth(s)) }, 0)
		}},
		{name: "optional fields null", opts: ws.Options{NullOptional: true}, run: func(t *testing.T, s *ws.Server, e *exporter) {
			e.waitView(t, 60*time.Second, "optional fields null", func() wsView { return noRepositories(wsTruth(s)) }, 0)
		}},
		{name: "repositories hidden without the contents scope", setup: func(s *ws.Server) {
			s.Grant(ws.ScopeThreadsMeta, ws.ScopeAnalytics)
		}, run: func(t *testing.T, s *ws.Server, e *exporter) {
			e.waitView(t, 60*time.Second, "no contents scope", func() wsView { return noRepositories(wsTruth(s)) }, 0)
		}},
		{name: "403 for the analytics scope", setup: func(s *ws.Server) {
			s.Grant(ws.ScopeThreadsMeta, ws.ScopeThreadsContents)
		}, run: func(t *testing.T, s *ws.Server, e *exporter) {
			line := e.waitLog(t, 60*time.Second, "daily-usage", ws.ScopeAnalytics)
			want := threadView(wsTruth(s))
			e.waitFor(t, 30*time.Second, "the threads counted without the rollup", func(mfs map[string]*dto.MetricFamily) (bool, string) {
				d := wsScraped(mfs).only(want).diff(want)
				return d == "", d
			})
			if v, _ := value(e.metrics(t), "amp_workspace_up", nil); v != 0 {
				t.Errorf("amp_workspace_up %v with the rollup refused (%s)", v, line)
			}
		}},
		{name: "sub-threads as rows only", opts: ws.Options{SubThreads: ws.SubThreadsRowsOnly}},
		{name: "sub-threads nested only", opts: ws.Options{SubThreads: ws.SubThreadsNestedOnly}},
		{name: "sub-threads answering their parent's usage", opts: ws.Options{SubThreadUsage: ws.SubUsageParent}},
		{name: "today growing", opts: ws.Options{GrowEachRequest: true}, run: func(t *testing.T, s *ws.Server, e *exporter) {
			synced := e.waitSync(t, 60*time.Second, 0)
			s.Update(func(o *ws.Options) { o.GrowEachRequest = false })
			e.waitTruth(t, 60*time.Second, "today stopped growing", s, synced)
		}},
		{name: "a closed day restated", run: func(t *testing.T, s *ws.Server, e *exporter) {
			synced := e.waitTruth(t, 60*time.Second, "first sync", s, 0)
			down := restateTrailing(t, s)
			e.waitView(t, 60*time.Second, "a day restated", func() wsView {
				v := wsTruth(s)
				v["daily"][down] += restateUSD // a decrease is never subtracted
				return v
			}, synced)
			counted(t, e, "amp_workspace_restatements_total", map[string]string{"endpoint": "daily_usage"})
		}},
		{name: "client_auth post", auth: "post", opts: ws.Options{ClientAuth: ws.AuthPost}},
		{name: "client_auth basic where only post is taken", opts: ws.Options{ClientAuth: ws.AuthPost}, run: func(t *testing.T, s *ws.Server, e *exporter) {
			e.waitLog(t, 60*time.Second, "token", "invalid_client")
			if n := s.Count(ws.RouteThreads) + s.Count(ws.RouteUsage) + s.Count(ws.RouteDaily); n != 0 {
				t.Errorf("%d API requests without a token", n)
			}
		}},
		{name: "the rollup's own member ids", cfg: &ws.Config{Seed: 7, Users: 6, Threads: 150, Days: 40, SeparateUserIDs: true},
			run: func(t *testing.T, s *ws.Server, e *exporter) {
				e.waitTruth(t, 60*time.Second, "separate member ids", s, 0)
				// Each family keeps the id its endpoint gives: the rollup's
				// members are not the threads' creators (nothing says which
				// is which), so no member's day is put on another's.
				v := wsScraped(e.metrics(t))
				for k := range v["daily"] {
					user, _, _ := strings.Cut(k, "/")
					if !strings.HasPrefix(user, "member_") {
						t.Errorf("daily{%s}: not the rollup's member id", k)
					}
				}
				for k := range v["usd"] {
					if strings.HasPrefix(k, "member_") {
						t.Errorf("usd{%s}: the rollup's member id on a thread's spend", k)
					}
				}
			}},
		{name: "strict parameters", opts: ws.Options{StrictParams: true}, run: func(t *testing.T, s *ws.Server, e *exporter) {
			// Every parameter the exporter sends is one the endpoints know.
			e.waitTruth(t, 60*time.Second, "strict parameters", s, 0)
			if n := s.Count(ws.RouteThreads); n < 2 {
				t.Errorf("%d listing pages: the cursor was never sent", n)
			}
		}},
		{name: "strict parameters, a listing parameter misnamed", opts: ws.Options{StrictParams: true},
			extra: []string{"listing_params: {cursor: cursor, after: after, before: before, sort: order}"},
			run: func(t *testing.T, s *ws.Server, e *exporter) {
				line := e.waitLog(t, 60*time.Second, "threads", "HTTP 400", "unknown parameter order")
				if v, _ := value(e.metrics(t), "amp_workspace_up", nil); v != 0 {
					t.Errorf("amp_workspace_up %v with the listing refused (%s)", v, line)
				}
			}},
		{name: "unknown parameters ignored, the cursor misnamed",
			extra: []string{"listing_params: {cursor: page, after: after, before: before, sort: sort}"},
			run: func(t *testing.T, s *ws.Server, e *exporter) {
				// The first page served again must not end the listing
				// as if it were complete.
				line := e.waitLog(t, 60*time.Second, "threads", "next cursor already followed", "listing_params.cursor")
				if v, _ := value(e.metrics(t), "amp_workspace_up", nil); v != 0 {
					t.Errorf("amp_workspace_up %v with the listing going round (%s)", v, line)
				}
			}},
		{name: "days past 365 not served", cfg: &longWorkspace, opts: ws.Options{MaxAge365: true}, run: func(t *testing.T, s *ws.Server, e *exporter) {
			waitHistory365(t, s, e)
		}},
		// The oldest day an answer holds beyond what was asked for is a day
		// before history_days: counted, it would show.
		{name: "a window one day longer than asked", cfg: &longWorkspace, opts: ws.Options{WindowOneDayLonger: true}, run: func(t *testing.T, s *ws.Server, e *exporter) {
			waitHistory365(t, s, e)
		}},
		{name: "resource required and configured", opts: ws.Options{Resource: ws.ResourceRequired},
			extra: []string{"resource: " + ws.ResourceURL}},
		{name: "resource required and not configured", opts: ws.Options{Resource: ws.ResourceRequired}, run: func(t *testing.T, s *ws.Server, e *exporter) {
			e.waitLog(t, 60*time.Second, "token", "invalid_target", "resource")
			if n := s.Count(ws.RouteThreads) + s.Count(ws.RouteUsage) + s.Count(ws.RouteDaily); n != 0 {
				t.Errorf("%d API requests without a token", n)
			}
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			cfg := smallWorkspace
			if c.cfg != nil {
				cfg = *c.cfg
			}
			s := newWorkspaceStandIn(t, cfg, c.opts)
			if c.setup != nil {
				c.setup(s)
			}
			auth := c.auth
			if auth == "" {
				auth = "basic"
			}
			e := startExporter(t, exporterOpts{args: []string{"--config.file=" + workspaceConfig(t, s, auth, c.extra...)}})
			if c.run != nil {
				c.run(t, s, e)
			} else {
				e.waitTruth(t, 60*time.Second, c.name, s, 0)
			}
			if n := s.NonGET(); n != 0 {
				t.Errorf("%d requests other than GET", n)
			}
			if found := secretsIn(e.output.String()); len(found) > 0 {
				t.Errorf("%v in the log", found)
			}
		})
	}
}

// longWorkspace spans more days than the rollup's 365.
var longWorkspace = ws.Config{Seed: 7, Users: 6, Threads: 150, Days: 400}

// waitHistory365 waits for the truth with the rollup's families made of
// the 365 days history_days reads by default, on a workspace that has
// older ones.
func waitHistory365(t *testing.T, s *ws.Server, e *exporter) {
	t.Helper()
	today, _ := time.Parse(time.DateOnly, s.Today())
	first := today.AddDate(0, 0, -364).Format(time.DateOnly)
	if all := wsTruth(s); rollupSince(all, s, first).diff(all) == "" {
		t.Fatal("the workspace has no day before the 365 read: the case proves nothing")
	}
	e.waitView(t, 60*time.Second, "365 days of a longer workspace", func() wsView { return rollupSince(wsTruth(s), s, first) }, 0)
}

// rollupSince is v with its rollup families (daily, lines) made of the
// rollup's days from first (YYYY-MM-DD) on only.
func rollupSince(v wsView, s *ws.Server, first string) wsView {
	out := wsView{}
	for k, x := range v {
		out[k] = x
	}
	daily, lines := map[string]float64{}, map[string]float64{}
	add := func(m map[string]float64, key string, x float64) {
		if x != 0 {
			m[key] += x
		}
	}
	ro := s.Rollup()
	for k, u := range ro.ByDay {
		if k.Day >= first {
			add(daily, k.User+"/"+k.Model, u.USD())
		}
	}
	for k, d := range ro.UserDay {
		if k.Day >= first {
			add(lines, k.User+"/added", float64(d.LinesAdded))
			add(lines, k.User+"/deleted", float64(d.LinesDeleted))
			add(lines, k.User+"/modified", float64(d.LinesModified))
		}
	}
	out["daily"], out["lines"] = daily, lines
	return out
}

// restateUSD is what restateTrailing moves a member's day by.
const restateUSD = 1.0 / 64

// restateTrailing restates two member-days of the trailing days the
// exporter reads again (yesterday and the day before): one member's
// first model up by restateUSD, another's down by as much. It returns the
// key of the one lowered in wsView's daily family ("user/model").
func restateTrailing(t *testing.T, s *ws.Server) (down string) {
	t.Helper()
	today, _ := time.Parse(time.DateOnly, s.Today())
	ro := s.Rollup()
	type memberDay struct {
		day string
		u   int
	}
	var found []memberDay
	for back := 1; back <= 2; back++ {
		day := today.AddDate(0, 0, -back).Format(time.DateOnly)
		for u := range s.Config().Users {
			m := ws.Models[ws.UserModels(u)[0]].Name
			if ro.ByDay[ws.DayUserModel{Day: day, User: s.RollupUserID(u), Model: m}].USD() > restateUSD {
				found = append(found, memberDay{day, u})
			}
		}
	}
	if len(found) < 2 {
		t.Fatalf("fewer than two member-days to restate: %v", found)
	}
	units := int64(restateUSD * ws.UnitsPerUSD)
	if !s.Restate(found[0].day, s.RollupUserID(found[0].u), units) || !s.Restate(found[1].day, s.RollupUserID(found[1].u), -units) {
		t.Fatal("restate refused")
	}
	return s.UserID(found[1].u) + "/" + ws.Models[ws.UserModels(found[1].u)[0]].Name
}

// TestWorkspaceBackfill backfills the workspace's history from Amp's
// daily rollup (amp-exporter backfill with amp_workspace on), turns it into
// blocks with promtool and loads them into Prometheus, then starts the
// exporter on a fresh state and lets Prometheus scrape it: per member and
// model the rollup's dollars, per member and kind its lines, the last
// backfilled sample equals the first live one, nothing resets, and the
// history ends at the rollup's truth.
func TestWorkspaceBackfill(t *testing.T) {
	requireTool(t, "promtool")
	requireTool(t, "prometheus")
	s := newWorkspaceStandIn(t, smallWorkspace, ws.Options{})
	cfg := workspaceConfig(t, s, "basic")
	work := t.TempDir()
	env := append(os.Environ(), "AMP_API_KEY=", "XDG_DATA_HOME="+filepath.Join(work, "no-amp-login-here"),
		"AMP_THREADS_DIR="+filepath.Join(work, "no-threads-here"))
	port := freePort(t)
	instance := fmt.Sprintf("127.0.0.1:%d", port)

	om := filepath.Join(work, "history.om")
	cmd := exec.Command(exporterBin, "backfill", "--config.file="+cfg, "--output="+om, "--step=1h",
		"--label=job=amp", "--label=instance="+instance)
	cmd.Env = env
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("backfill: %v\n%s", err, out)
	}
	t.Logf("backfill: %s", out)
	history := string(mustRead(t, om))
	for _, fam := range []string{"amp_workspace_daily_usage_usd_total{", "amp_workspace_lines_total{"} {
		if !strings.Contains(history, fam) {
			t.Fatalf("the backfill wrote no %s history", strings.TrimSuffix(fam, "{"))
		}
	}
	if found := secretsIn(history + string(out)); len(found) > 0 {
		t.Errorf("%v in the backfill's output", found)
	}
	_, next, ok := strings.Cut(string(out), "\nnext: ")
	next, _, _ = strings.Cut(next, "  (DATA_DIR: ")
	if !ok || !strings.HasPrefix(next, "promtool tsdb create-blocks-from openmetrics ") {
		t.Fatalf("the summary does not say what to run next:\n%s", out)
	}
	data := filepath.Join(work, "prometheus-data")
	if out, err := exec.Command("sh", "-c", strings.Replace(next, "DATA_DIR", "'"+data+"'", 1)).CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s", next, err, out)
	}
	until := lastSampleTime(t, om)

	e := startExporter(t, exporterOpts{port: port, args: []string{"--config.file=" + cfg, "--storage.path=" + filepath.Join(work, "state")}})
	e.waitTruth(t, 60*time.Second, "first sync", s, 0)
	prom := startPrometheusOn(t, data, instance)
	truth := wsTruth(s)
	for _, f := range []struct {
		fam, metric string
		by          []string
	}{
		{"daily", "amp_workspace_daily_usage_usd_total", []string{"user", "model"}},
		{"lines", "amp_workspace_lines_total", []string{"user", "kind"}},
	} {
		var series []promSeries
		deadline := time.Now().Add(30 * time.Second)
		for {
			series = prom.queryAt(t, f.metric+`{job="amp"}[90d]`, time.Now())
			live := len(series) > 0
			for _, sr := range series {
				n := 0
				for _, p := range sr.points {
					if p[0] > until {
						n++
					}
				}
				live = live && n >= 2
			}
			if live {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: Prometheus did not scrape every series twice in 30 s", f.metric)
			}
			time.Sleep(200 * time.Millisecond)
		}
		joined := 0
		for _, sr := range series {
			parts := make([]string, len(f.by))
			for i, l := range f.by {
				parts[i] = sr.labels[l]
			}
			key := strings.Join(parts, "/")
			var last, first [2]float64
			var past int
			for _, p := range sr.points {
				if p[0] <= until {
					last = p
					past++
				} else if first[0] == 0 {
					first = p
				}
			}
			if want := truth[f.fam][key]; want == 0 {
				continue // a series of zeros: a member's kind of line never changed
			}
			if past < 2 {
				t.Errorf("%s{%s}: %d backfilled samples", f.metric, key, past)
				continue
			}
			joined++
			if last[1] != first[1] || last[1] != truth[f.fam][key] {
				t.Errorf("%s{%s}: last backfilled %v, first live %v, the rollup %v", f.metric, key, last[1], first[1], truth[f.fam][key])
			}
		}
		if joined != len(truth[f.fam]) {
			t.Errorf("%s: %d series joined, the rollup has %d", f.metric, joined, len(truth[f.fam]))
		}
		if r := prom.scalarAt(t, `sum(resets(`+f.metric+`{job="amp"}[90d]))`, time.Now()); r != 0 {
			t.Errorf("resets(%s) over the joined series: %v", f.metric, r)
		}
	}
}

// TestWorkspaceKilledMidSync kills the exporter with SIGKILL in the middle
// of its first sync, once the state was saved at the first checkpoint
// (every 1,000 usage answers): restarted with --storage.path, it asks
// again only for the threads the checkpoint did not hold, and ends at the
// truth exactly: what it counted twice is held by the threads' marks.
func TestWorkspaceKilledMidSync(t *testing.T) {
	s := newWorkspaceStandIn(t, ws.Config{Seed: 11}, ws.Options{})
	storage := t.TempDir()
	opts := exporterOpts{args: []string{"--config.file=" + workspaceConfig(t, s, "basic"), "--storage.path=" + storage}}
	e := startExporter(t, opts)
	deadline := time.Now().Add(60 * time.Second)
	for stateStamp(storage).IsZero() {
		if time.Now().After(deadline) || e.exited() {
			t.Fatalf("no checkpoint of the first sync within a minute (%d usage answers)", s.Count(ws.RouteUsage))
		}
		time.Sleep(10 * time.Millisecond)
	}
	e.killHard(t)
	before := s.Count(ws.RouteUsage)
	total := s.ThreadTotals(true).MainThreads
	if before >= total {
		t.Fatalf("the first sync ended (%d usage answers) before the kill: the test proves nothing", before)
	}
	s.ResetRequests()
	e2 := startExporter(t, opts)
	e2.waitTruth(t, 60*time.Second, "after the kill in the middle of the first sync", s, 0)
	again := s.Count(ws.RouteUsage)
	t.Logf("killed after %d of %d usage answers; the restart asked for %d", before, total, again)
	if again > total-workspace.CheckpointEvery {
		t.Errorf("the restart asked for %d threads' usage: the checkpoint's %d were asked again", again, workspace.CheckpointEvery)
	}
	checkNoSecrets(t, e2, storage, e.output.String(), e2.output.String())
}
