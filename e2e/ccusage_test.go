//go:build e2e

package e2e

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/amp-exporter/amp-exporter/internal/testsupport/threadgen"
)

// ccusageBin finds the ccusage 20 binary (a Rust binary shipped on npm).
// .ci/run installs it with `npm install ccusage@20.0.24` into
// .cache/ccusage; AMP_E2E_CCUSAGE overrides the path. Missing, the test
// fails: these numbers are the ones users compare against.
func ccusageBin(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("AMP_E2E_CCUSAGE"); p != "" {
		return p
	}
	p := filepath.Join(repoRoot, ".cache", "ccusage", "node_modules", "@ccusage", "ccusage-linux-x64", "bin", "ccusage")
	fi, err := os.Stat(p)
	if err != nil {
		t.Fatalf("ccusage not found at %s: run .ci/run, or `npm install --prefix .cache/ccusage ccusage@20.0.24`", p)
	}
	// npm unpacks the platform binary without its execute bit; ccusage's
	// JavaScript launcher sets it on first use, which is skipped here.
	if fi.Mode()&0o100 == 0 {
		if err := os.Chmod(p, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return p
}

type tokenCounts struct {
	Input, Output, CacheRead, CacheCreation float64
}

// costs are USD per model.
type costs map[string]float64

// ccusageByModel runs `ccusage amp session --json --offline` on a thread
// directory and sums its per-model breakdowns.
func ccusageByModel(t *testing.T, dir string) (map[string]tokenCounts, float64) {
	byModel, credits, _ := ccusageReport(t, dir)
	return byModel, credits
}

func ccusageReport(t *testing.T, dir string) (map[string]tokenCounts, float64, costs) {
	t.Helper()
	data := t.TempDir()
	if err := os.Symlink(dir, filepath.Join(data, "threads")); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(ccusageBin(t), "amp", "session", "--json", "--offline")
	cmd.Env = []string{"HOME=" + t.TempDir(), "PATH=/usr/bin:/bin", "AMP_DATA_DIR=" + data, "TZ=UTC"}
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("ccusage: %v", err)
	}
	var report struct {
		Sessions []struct {
			Credits         float64 `json:"credits"`
			ModelBreakdowns []struct {
				ModelName           string  `json:"modelName"`
				InputTokens         float64 `json:"inputTokens"`
				OutputTokens        float64 `json:"outputTokens"`
				CacheReadTokens     float64 `json:"cacheReadTokens"`
				CacheCreationTokens float64 `json:"cacheCreationTokens"`
				Cost                float64 `json:"cost"`
			} `json:"modelBreakdowns"`
		} `json:"sessions"`
	}
	if err := json.Unmarshal(out, &report); err != nil {
		t.Fatalf("ccusage output: %v\n%s", err, out)
	}
	byModel := map[string]tokenCounts{}
	credits := 0.0
	cost := costs{}
	for _, s := range report.Sessions {
		credits += s.Credits
		for _, m := range s.ModelBreakdowns {
			cost[m.ModelName] += m.Cost
			c := byModel[m.ModelName]
			c.Input += m.InputTokens
			c.Output += m.OutputTokens
			c.CacheRead += m.CacheReadTokens
			c.CacheCreation += m.CacheCreationTokens
			byModel[m.ModelName] = c
		}
	}
	return byModel, credits, cost
}

func exporterCosts(mfs map[string]*dto.MetricFamily) costs {
	out := costs{}
	if mf := mfs["amp_cost_usd_total"]; mf != nil {
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "model" {
					out[l.GetValue()] += m.GetCounter().GetValue()
				}
			}
		}
	}
	return out
}

// exporterByModel reads amp_tokens_total and amp_credits_total.
func exporterByModel(mfs map[string]*dto.MetricFamily) (map[string]tokenCounts, float64) {
	byModel := map[string]tokenCounts{}
	if mf := mfs["amp_tokens_total"]; mf != nil {
		for _, m := range mf.GetMetric() {
			var model, typ string
			for _, l := range m.GetLabel() {
				switch l.GetName() {
				case "model":
					model = l.GetValue()
				case "token_type":
					typ = l.GetValue()
				}
			}
			c := byModel[model]
			v := m.GetCounter().GetValue()
			switch typ {
			case "input":
				c.Input += v
			case "output":
				c.Output += v
			case "cache_read":
				c.CacheRead += v
			case "cache_creation":
				c.CacheCreation += v
			}
			byModel[model] = c
		}
	}
	credits := 0.0
	if mf := mfs["amp_credits_total"]; mf != nil {
		for _, m := range mf.GetMetric() {
			credits += m.GetCounter().GetValue()
		}
	}
	return byModel, credits
}

func compareModels(t *testing.T, what string, ours, theirs map[string]tokenCounts) {
	t.Helper()
	models := map[string]bool{}
	for m := range ours {
		models[m] = true
	}
	for m := range theirs {
		models[m] = true
	}
	var names []string
	for m := range models {
		names = append(names, m)
	}
	sort.Strings(names)
	for _, m := range names {
		if ours[m] != theirs[m] {
			t.Errorf("%s: model %q: amp-exporter %+v, ccusage %+v", what, m, ours[m], theirs[m])
		}
	}
}

func closeEnough(a, b float64) bool {
	d := a - b
	if d < 0 {
		d = -d
	}
	return d <= 1e-6*(1+b)
}

// TestTokensAgreeWithCcusageOnRealisticCorpus generates a corpus of both
// eras (message usage and usageLedger) and requires the per-model token
// totals and the credits to equal what ccusage reports for the same files.
func TestTokensAgreeWithCcusageOnRealisticCorpus(t *testing.T) {
	dir := t.TempDir()
	g := threadgen.New(threadgen.Options{Threads: 120, TotalBytes: 40 << 20, Seed: 42, Start: time.Date(2026, 1, 12, 8, 0, 0, 0, time.UTC)})
	if _, err := g.WriteDir(dir); err != nil {
		t.Fatal(err)
	}
	theirs, theirCredits, theirCost := ccusageReport(t, dir)
	if len(theirs) < 3 {
		t.Fatalf("ccusage saw only %d models: the corpus is not exercising it", len(theirs))
	}
	e := startExporter(t, exporterOpts{threadsDir: dir})
	mfs := e.metrics(t)
	ours, ourCredits := exporterByModel(mfs)
	compareModels(t, "generated corpus", ours, theirs)
	if !closeEnough(ourCredits, theirCredits) || theirCredits == 0 {
		t.Errorf("credits: amp-exporter %v, ccusage %v", ourCredits, theirCredits)
	}
	// Dollars: the list-price estimates agree for Claude models (both
	// tables carry Anthropic's prices). Other providers' token semantics
	// and prices differ between the tables; see docs/pricing.md.
	ourCost := exporterCosts(mfs)
	claude := 0
	for model, want := range theirCost {
		if !strings.HasPrefix(model, "claude-") {
			continue
		}
		claude++
		if got := ourCost[model]; !closeEnough(got, want) {
			t.Errorf("cost of %s: amp-exporter $%.6f, ccusage $%.6f", model, got, want)
		}
	}
	if claude < 3 {
		t.Errorf("only %d Claude models priced by ccusage", claude)
	}
	for model, want := range theirCost {
		t.Logf("cost of %-40s amp-exporter $%12.6f  ccusage $%12.6f", model, ourCost[model], want)
	}
}

// TestCcusageDifferencesAreTheDocumentedOnes runs both tools on the parser
// fixtures. The fixtures both count identically must agree exactly; on each
// of the others the difference must be the one the README documents.
func TestCcusageDifferencesAreTheDocumentedOnes(t *testing.T) {
	agreeing := []string{"usage-era.json", "ledger-era.json", "both-eras.json", "cancelled-and-errors.json"}
	dir := t.TempDir()
	copyFixtures(t, dir, agreeing...)
	theirs, _ := ccusageByModel(t, dir)
	e := startExporter(t, exporterOpts{threadsDir: dir})
	ours, _ := exporterByModel(e.metrics(t))
	compareModels(t, strings.Join(agreeing, ","), ours, theirs)

	differing := []struct {
		fixture string
		// what ccusage reports, and what the exporter reports instead
		ccusage, exporter map[string]tokenCounts
	}{
		// No usage.timestamp: ccusage cannot date the message and drops it.
		{"legacy-no-timestamps.json", map[string]tokenCounts{},
			map[string]tokenCounts{"claude-sonnet-4-5-20250929": {Input: 2100, Output: 300}}},
		// A message still streaming has usage but no timestamp yet (Amp
		// stamps it when the inference ends): ccusage drops it until then.
		{"openai-streaming.json",
			map[string]tokenCounts{"gpt-5.2-codex": {Output: 420, CacheCreation: 15300}},
			map[string]tokenCounts{"gpt-5.2-codex": {Output: 455, CacheRead: 15200, CacheCreation: 16200}}},
		// An empty usageLedger.events array: ccusage bills the thread by its
		// (empty) ledger; the exporter by its messages.
		{"empty-ledger.json", map[string]tokenCounts{},
			map[string]tokenCounts{"claude-sonnet-4-5-20250929": {Input: 11, Output: 7, CacheCreation: 5000}}},
		// A fork repeats its parent's first two messages (one assistant
		// message of 12/180/0/9800): ccusage counts them again.
		{"fork-child.json",
			map[string]tokenCounts{"claude-opus-4-6": {Input: 21, Output: 250, CacheRead: 9800, CacheCreation: 10100}},
			map[string]tokenCounts{"claude-opus-4-6": {Input: 9, Output: 70, CacheRead: 9800, CacheCreation: 300}}},
	}
	for _, d := range differing {
		t.Run(d.fixture, func(t *testing.T) {
			dir := t.TempDir()
			copyFixtures(t, dir, d.fixture)
			theirs, _ := ccusageByModel(t, dir)
			compareModels(t, "ccusage on "+d.fixture, theirs, d.ccusage)
			e := startExporter(t, exporterOpts{threadsDir: dir})
			ours, _ := exporterByModel(e.metrics(t))
			compareModels(t, "amp-exporter on "+d.fixture, ours, d.exporter)
		})
	}
}
