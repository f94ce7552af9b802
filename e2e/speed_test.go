//go:build e2e

package e2e

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/amp-exporter/amp-exporter/internal/testsupport/ampservertest"
	"github.com/amp-exporter/amp-exporter/internal/testsupport/threadgen"
	"github.com/amp-exporter/amp-exporter/pricing"
)

// TestFastAndPlaidPricedThroughPrometheus: generated threads whose
// messages run fast (Claude Opus 4.6, from the start or switched on mid
// thread) and plaid (GPT-6 Astra; Opus asked plaid, billed fast), half as
// local thread files, half on the Amp server stand-in. A real Prometheus
// reads the exporter: per model, the estimated dollars equal the
// generator's tokens at each speed times the list price times the Amp
// CLI's multiplier for that speed, and the premium family what the
// multipliers added. The truth is the generator's own account of what it
// wrote, priced here, not the store's count.
func TestFastAndPlaidPricedThroughPrometheus(t *testing.T) {
	requireTool(t, "prometheus")
	const n = 40
	g := threadgen.New(threadgen.Options{Threads: n, TotalBytes: n * 30_000, Seed: 11, Speeds: true})
	srv := ampservertest.New(standinKey, "dev@example.com")
	defer srv.Close()
	dir := t.TempDir()
	for i := range n / 2 {
		name, data := g.Thread(i)
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := srv.PutGenerated(g, n/2, n); err != nil {
		t.Fatal(err)
	}

	// GPT-6 Astra is in no public price table: the configuration gives
	// its list price, and the truth uses the same.
	astra := pricing.Price{Input: 2, Output: 16, CacheRead: 0.2, HasCacheRead: true}
	tab, err := pricing.Embedded(nil)
	if err != nil {
		t.Fatal(err)
	}
	prices := pricing.New(tab, "genai-prices", tab.Version, map[string]pricing.Price{"gpt-6-astra": astra})
	speeds, err := pricing.EmbeddedSpeeds()
	if err != nil {
		t.Fatal(err)
	}
	wantCost, speedPremium := g.SpeedDollars(prices, speeds)
	wantPremium := map[string]map[string]float64{"fast": {}, "plaid": {}}
	for k, v := range speedPremium {
		wantPremium[k.Speed][k.Model] = v
	}
	if len(wantPremium["fast"]) == 0 || len(wantPremium["plaid"]) == 0 {
		t.Fatalf("the corpus has no fast or no plaid spend: %v", wantPremium)
	}
	for _, m := range []string{"claude-opus-4-6", "gpt-6-astra"} {
		if wantCost[m] <= 0 {
			t.Fatalf("the corpus spent nothing on %s: %v", m, wantCost)
		}
	}

	data := ampLogin(t, srv.URL)
	cfg := filepath.Join(t.TempDir(), "amp-exporter.yml")
	if err := os.WriteFile(cfg, []byte(fmt.Sprintf(`threads:
  dirs: [%q]
amp_server:
  sync_interval: 2s
pricing:
  models:
    gpt-6-astra: {input: 2, output: 16, cache_read: 0.2}
`, dir)), 0o644); err != nil {
		t.Fatal(err)
	}
	e := startExporter(t, exporterOpts{
		args: []string{"--config.file=" + cfg, "--storage.path=" + t.TempDir()},
		env:  []string{"XDG_DATA_HOME=" + data, "AMP_URL=" + srv.URL},
	})
	e.waitFor(t, 60*time.Second, "every thread counted", func(mfs map[string]*dto.MetricFamily) (bool, string) {
		threads, _ := value(mfs, "amp_threads", nil)
		return threads == n, fmt.Sprintf("threads %v of %d", threads, n)
	})

	prom := startPrometheus(t, strings.TrimPrefix(e.base, "http://"))
	// byModel queries Prometheus until q, summed by model, is want for
	// every model want names (dollars are sums of fixed-point values: the
	// same sum in another order may differ in a float's last bit).
	byModel := func(what, q string, want map[string]float64) {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		for {
			got, err := prom.query(q, "model")
			ok := err == nil
			for m, w := range want {
				if math.Abs(got[m]-w) > 1e-9*math.Max(1, w) {
					ok = false
				}
			}
			if ok {
				t.Logf("%s: %v", what, got)
				return
			}
			if time.Now().After(deadline) {
				t.Errorf("%s by model: %v (%v), want %v", what, got, err, want)
				return
			}
			time.Sleep(200 * time.Millisecond)
		}
	}
	byModel("estimated USD", `sum by (model) (amp_cost_usd_total{job="amp"})`, wantCost)
	for _, speed := range []string{"fast", "plaid"} {
		byModel(speed+" premium", fmt.Sprintf(`sum by (model) (amp_speed_premium_usd_total{job="amp",speed=%q})`, speed), wantPremium[speed])
	}
	// No premium for a speed the corpus never ran a model at.
	pairs := len(wantPremium["fast"]) + len(wantPremium["plaid"])
	got, err := prom.query(`count(sum by (model, speed) (amp_speed_premium_usd_total{job="amp"}) > 0)`, "")
	if err != nil || got[""] != float64(pairs) {
		t.Errorf("model and speed pairs with a premium: %v (%v), want %d: %v", got, err, pairs, wantPremium)
	}
}
