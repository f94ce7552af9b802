//go:build e2e

package e2e

import (
	"bytes"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/amp-exporter/amp-exporter/internal/testsupport/ampservertest"
	"github.com/amp-exporter/amp-exporter/internal/testsupport/threadgen"
	"github.com/amp-exporter/amp-exporter/parser/thread"
	"github.com/amp-exporter/amp-exporter/pricing"
	"github.com/amp-exporter/amp-exporter/store"
)

// TestRepositoryLabel: threads spread over repositories whose remotes are
// written in every form (a token in some), and threads without a remote,
// some as local files, some on the Amp server stand-in, a third of them
// both. A real Prometheus reads the exporter: tokens by repository and
// type equal what the generator spent per repository, estimated dollars
// equal each thread's own priced under its repository, billed dollars what
// the stand-in billed per repository; each repository is one value; a
// `repositories` rule folds one host's repositories into a project. The
// secret in the remotes appears nowhere: /metrics, the log, /config, the
// landing page, the state directory.
func TestRepositoryLabel(t *testing.T) {
	const n, repos = 66, 5 // 6 slots (5 repositories, no remote) × 11: every form of each
	g := threadgen.New(threadgen.Options{Threads: n, TotalBytes: 6_000_000, Seed: 25, Repositories: repos})
	// The rule: every bitbucket.org repository is the project "bitbucket".
	project := func(repo string) string {
		if strings.HasPrefix(repo, "bitbucket.org/") {
			return "bitbucket"
		}
		return repo
	}
	srv := ampservertest.New(standinKey, "dev@example.com")
	defer srv.Close()
	// Local files: threads [0, 2n/3); the server: [n/3, n). The middle
	// third is both, counted once (from the file, billed from the server).
	dir := t.TempDir()
	for i := range 2 * n / 3 {
		name, data := g.Thread(i)
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := srv.PutGenerated(g, n/3, n); err != nil {
		t.Fatal(err)
	}

	// What each repository spent, by the generator's own account, and
	// the dollars of each thread priced alone (as the exporter prices its
	// items), under the repository the generator wrote it for.
	tab, err := pricing.Embedded(nil)
	if err != nil {
		t.Fatal(err)
	}
	prices := pricing.New(tab, "genai-prices", tab.Version, nil)
	pricer := store.NewThreadStore(store.StoreOptions{})
	pricer.SetPrices(prices)
	wantUSD, wantBilled, wantThreads := map[string]float64{}, map[string]float64{}, map[string]float64{}
	usdFixed := map[string]int64{}
	p := thread.NewParser()
	for i := range n {
		_, data := g.Thread(i)
		th, err := p.ParseBytes(data)
		if err != nil {
			t.Fatal(err)
		}
		sum := thread.Summarize(th)
		repo := project(g.Repository(i))
		for k, v := range pricer.Count(sum) {
			if k.Fam == store.FamCost {
				usdFixed[repo] += v
			}
		}
		wantThreads[repo]++
		if i >= n/3 {
			// A bill per server thread, different per thread.
			usd := float64(i+1) * 0.01
			srv.SetCost(sum.ID, map[string]any{"title": "t", "totalCostUSD": usd})
			wantBilled[repo] += usd
		}
	}
	for repo, v := range usdFixed {
		wantUSD[repo] = store.Unfixed(store.FamCost, v)
	}
	wantTokens := map[string]map[string]float64{} // token type → repository → tokens
	for _, typ := range store.TokenTypes {
		wantTokens[typ] = map[string]float64{}
	}
	spend := g.Spend()
	for repo, rs := range spend {
		for _, tok := range rs.Tokens {
			r := project(repo)
			wantTokens["input"][r] += float64(tok.Input)
			wantTokens["output"][r] += float64(tok.Output)
			wantTokens["cache_read"][r] += float64(tok.CacheRead)
			wantTokens["cache_creation"][r] += float64(tok.CacheCreation)
		}
	}
	if len(spend) != repos+1 || spend[""] == nil || len(wantBilled) != len(wantTokens["output"]) {
		t.Fatalf("the corpus spent in %d repositories (want %d and threads without a remote), billed in %d", len(spend), repos, len(wantBilled))
	}

	data := ampLogin(t, srv.URL)
	cfg := filepath.Join(t.TempDir(), "amp-exporter.yml")
	if err := os.WriteFile(cfg, []byte(fmt.Sprintf(`threads:
  dirs: [%q]
amp_server:
  sync_interval: 2s
repositories:
  - match: 'bitbucket\.org/.+'
    name: bitbucket
`, dir)), 0o644); err != nil {
		t.Fatal(err)
	}
	storage := t.TempDir()
	e := startExporter(t, exporterOpts{
		args: []string{"--config.file=" + cfg, "--storage.path=" + storage},
		env:  []string{"XDG_DATA_HOME=" + data, "AMP_URL=" + srv.URL},
	})
	billedTotal := 0.0
	for _, v := range wantBilled {
		billedTotal += v
	}
	e.waitFor(t, 60*time.Second, "every thread counted and billed", func(mfs map[string]*dto.MetricFamily) (bool, string) {
		threads, _ := value(mfs, "amp_threads", nil)
		billed, _ := value(mfs, "amp_billed_cost_usd_total", nil)
		return threads == n && math.Abs(billed-billedTotal) < 1e-9, fmt.Sprintf("threads %v of %d, billed %v of %v", threads, n, billed, billedTotal)
	})

	prom := startPrometheus(t, strings.TrimPrefix(e.base, "http://"))
	// by queries Prometheus until q, summed by repository, is want.
	by := func(what, q string, want map[string]float64, exact bool) {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		for {
			got, err := prom.query(q, "repository")
			ok := err == nil && len(got) == len(want)
			for repo, w := range want {
				if exact && got[repo] != w || !exact && math.Abs(got[repo]-w) > 1e-9*math.Max(1, w) {
					ok = false
				}
			}
			if ok {
				return
			}
			if time.Now().After(deadline) {
				t.Errorf("%s by repository: %v (%v), want %v", what, got, err, want)
				return
			}
			time.Sleep(200 * time.Millisecond)
		}
	}
	for _, typ := range store.TokenTypes {
		by(typ+" tokens", fmt.Sprintf(`sum by (repository, token_type) (amp_tokens_total{job="amp",token_type=%q})`, typ), wantTokens[typ], true)
	}
	// Dollars are sums of fixed-point values: the same sum in another
	// order may differ in the last bit of a float.
	by("estimated USD", `sum by (repository) (amp_cost_usd_total{job="amp"})`, wantUSD, false)
	by("billed USD", `sum by (repository) (amp_billed_cost_usd_total{job="amp"})`, wantBilled, false)
	by("threads", `sum by (repository) (amp_threads{job="amp"})`, wantThreads, true)

	// Each repository is one value: host/path as the generator knows it,
	// or the rule's project; none has a form's leftovers (a port, a user,
	// ".git", a trailing slash, an upper-case host).
	mfs := e.metrics(t)
	values := map[string]bool{}
	for _, name := range []string{"amp_tokens_total", "amp_cost_usd_total", "amp_prompts_total", "amp_threads", "amp_billed_cost_usd_total"} {
		for _, m := range mfs[name].GetMetric() {
			for _, lp := range m.GetLabel() {
				if lp.GetName() == "repository" {
					values[lp.GetValue()] = true
				}
			}
		}
	}
	for v := range values {
		if _, ok := wantThreads[v]; !ok || v == "" {
			t.Errorf("repository %q: not a repository of the corpus", v)
		}
	}
	if len(values) != len(wantThreads)-1 {
		t.Errorf("repository values %v, want those of %v (but none)", values, wantThreads)
	}
	if !values["bitbucket"] {
		t.Errorf("the repositories rule named nothing: %v", values)
	}

	// The secret: nowhere.
	leak := regexp.MustCompile(regexp.QuoteMeta(threadgen.RemoteSecret))
	for _, path := range []string{"/metrics", "/config", "/"} {
		code, body, err := e.get(path)
		if err != nil || code != 200 {
			t.Fatalf("GET %s: %d %v", path, code, err)
		}
		if leak.MatchString(body) {
			t.Errorf("GET %s shows the remote's secret", path)
		}
		if path == "/config" && !strings.Contains(body, "repository: true") {
			t.Errorf("/config does not show the label's switch:\n%s", body)
		}
	}
	if err := e.stop(); err != nil {
		t.Fatal(err)
	}
	if leak.MatchString(e.output.String()) {
		t.Error("the exporter's log holds the remote's secret")
	}
	files := 0
	err = filepath.WalkDir(storage, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		files++
		if bytes.Contains(b, []byte(threadgen.RemoteSecret)) {
			t.Errorf("%s holds the remote's secret", path)
		}
		if !bytes.Contains(b, []byte("github.com/")) && strings.HasSuffix(path, "state.log") {
			t.Errorf("%s holds no repository: the test reads the wrong file", path)
		}
		return nil
	})
	if err != nil || files == 0 {
		t.Fatalf("state directory: %d files, %v", files, err)
	}
}
