package ampserver

import (
	"bytes"
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/amp-exporter/amp-exporter/internal/clock"
	"github.com/amp-exporter/amp-exporter/internal/testsupport/ampservertest"
	"github.com/amp-exporter/amp-exporter/internal/testsupport/threadgen"
	"github.com/amp-exporter/amp-exporter/pricing"
	"github.com/amp-exporter/amp-exporter/store"
)

// TestSyncPricesFastAndPlaid: threads with fast and plaid messages, synced
// from the stand-in, are priced at the Amp CLI's multiples of the list
// price (the expected dollars worked out per million tokens from what the
// generator wrote); a fast message added to a thread later adds exactly
// its own cost at that speed, and its premium.
func TestSyncPricesFastAndPlaid(t *testing.T) {
	srv := ampservertest.New(testKey, "alice@example.com")
	t.Cleanup(srv.Close)
	g := threadgen.New(threadgen.Options{Threads: 40, TotalBytes: 40 * 20_000, Seed: 11, Speeds: true})
	if err := srv.PutGenerated(g, 0, g.Len()); err != nil {
		t.Fatal(err)
	}
	tab, err := pricing.Embedded(func() time.Time { return t0 })
	if err != nil {
		t.Fatal(err)
	}
	prices := pricing.New(tab, "genai-prices", "test", map[string]pricing.Price{"gpt-6-astra": {Input: 2, Output: 16, CacheRead: 0.2, HasCacheRead: true}})
	h := &harness{t: t, srv: srv, owners: store.NewOwners(), clk: clock.NewFake(t0), rec: &recorder{}, cfg: SyncConfig{ListLimit: 50}, log: &bytes.Buffer{}}
	h.store = newServerStore(h.owners, h.clk)
	h.store.SetPrices(prices)
	h.sync = h.newSyncer(h.store)
	h.syncOK()

	speeds, err := pricing.EmbeddedSpeeds()
	if err != nil {
		t.Fatal(err)
	}
	asked := map[string]pricing.Speed{threadgen.SpeedStandard: pricing.Standard, threadgen.SpeedFast: pricing.Fast, threadgen.SpeedPlaid: pricing.Plaid}
	listCost := func(model string, tok threadgen.Tokens) float64 {
		p, _ := prices.Lookup(model)
		cw := p.CacheWrite
		if !p.HasCacheWrite {
			cw = p.Input
		}
		return (float64(tok.Input)*p.Input + float64(tok.Output)*p.Output + float64(tok.CacheRead)*p.CacheRead + float64(tok.CacheCreation)*cw) / 1e6
	}
	wantCost, wantPremium := map[string]float64{}, map[[2]string]float64{}
	for k, tok := range g.SpeedSpend() {
		mult, as := speeds.Multiplier(k.Model, asked[k.Speed])
		wantCost[k.Model] += listCost(k.Model, tok) * mult
		if as != pricing.Standard {
			wantPremium[[2]string{k.Model, as.String()}] += listCost(k.Model, tok) * (mult - 1)
		}
	}
	check := func(when string) {
		t.Helper()
		cost, premium := map[string]float64{}, map[[2]string]float64{}
		for k, v := range h.store.Snapshot().Totals() {
			switch k.Fam {
			case store.FamCost:
				cost[k.L1] += float64(v) / 1e10
			case store.FamSpeedPremium:
				premium[[2]string{k.L1, k.L2}] += float64(v) / 1e10
			}
		}
		near := func(a, b float64) bool { return math.Abs(a-b) <= 1e-9*math.Max(1, math.Abs(b)) }
		for _, model := range []string{"claude-opus-4-6", "gpt-6-astra"} {
			if wantCost[model] <= 0 || !near(cost[model], wantCost[model]) {
				t.Errorf("%s: %s costs $%.10f, want $%.10f", when, model, cost[model], wantCost[model])
			}
		}
		if len(premium) != len(wantPremium) {
			t.Errorf("%s: premiums %v, want %v", when, premium, wantPremium)
		}
		for k, want := range wantPremium {
			if !near(premium[k], want) {
				t.Errorf("%s: %s at %s adds $%.10f, want $%.10f", when, k[0], k[1], premium[k], want)
			}
		}
	}
	check("first sync")

	// A fast message of Opus 4.6 added to the first thread.
	tok := threadgen.Tokens{Input: 7, Output: 900, CacheRead: 30_000, CacheCreation: 1200}
	msg := fmt.Sprintf(`{"role":"assistant","messageId":100000,"content":[{"type":"text","text":"done"}],"state":{"type":"complete","stopReason":"end_turn"},`+
		`"usage":{"model":"claude-opus-4-6","features":["fast"],"maxInputTokens":168000,"inputTokens":%d,"outputTokens":%d,"cacheReadInputTokens":%d,"cacheCreationInputTokens":%d,"totalInputTokens":31207}}`,
		tok.Input, tok.Output, tok.CacheRead, tok.CacheCreation)
	h.srv.AppendMessage(h.srv.IDs()[0], []byte(msg), t0.Add(2*time.Minute).UnixMilli())
	h.clk.Advance(time.Minute)
	h.syncOK()
	mult, _ := speeds.Multiplier("claude-opus-4-6", pricing.Fast)
	wantCost["claude-opus-4-6"] += listCost("claude-opus-4-6", tok) * mult
	wantPremium[[2]string{"claude-opus-4-6", "fast"}] += listCost("claude-opus-4-6", tok) * (mult - 1)
	check("a fast message later")
}
