package collector

import (
	"math"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/amp-exporter/amp-exporter/internal/testsupport/threadgen"
	"github.com/amp-exporter/amp-exporter/parser/thread"
	"github.com/amp-exporter/amp-exporter/pricing"
	"github.com/amp-exporter/amp-exporter/store"
)

// TestSpeedsPricedEndToEnd: a generated corpus with fast and plaid
// messages, read as the Amp server's threads are (the parser, the store,
// the collector), shows in amp_cost_usd_total each model's tokens at the
// list price times the Amp CLI's multiplier for the speed its messages
// asked, and what the speeds added in amp_speed_premium_usd_total. The
// expected dollars are worked out from what the generator wrote, per
// million tokens.
func TestSpeedsPricedEndToEnd(t *testing.T) {
	g := threadgen.New(threadgen.Options{Threads: 40, TotalBytes: 40 * 30_000, Seed: 11, Speeds: true})
	tab, err := pricing.Embedded(func() time.Time { return fixedNow })
	if err != nil {
		t.Fatal(err)
	}
	astra := pricing.Price{Input: 2, Output: 16, CacheRead: 0.2, HasCacheRead: true}
	prices := pricing.New(tab, "genai-prices", "test", map[string]pricing.Price{"gpt-6-astra": astra})
	s := store.NewThreadStore(store.StoreOptions{Now: func() time.Time { return fixedNow }})
	s.SetPrices(prices)
	p := thread.NewParser()
	for i := range g.Len() {
		_, data := g.Thread(i)
		th, err := p.ParseBytes(data)
		if err != nil {
			t.Fatal(err)
		}
		s.Apply(store.AmpServerPath(th.ID), store.FileVersion{AmpServerV: th.Version}, thread.Summarize(th))
	}
	reg := prometheus.NewPedanticRegistry()
	c := NewAmpCollector(store.NewThreadStore(store.StoreOptions{}), nil)
	c.SetAmpServerStore(s)
	reg.MustRegister(c)
	cost, premium := map[string]float64{}, map[[2]string]float64{}
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			l := map[string]string{}
			for _, lp := range m.GetLabel() {
				l[lp.GetName()] = lp.GetValue()
			}
			switch mf.GetName() {
			case "amp_cost_usd_total":
				cost[l["model"]] += m.GetCounter().GetValue()
			case "amp_speed_premium_usd_total":
				premium[[2]string{l["model"], l["speed"]}] += m.GetCounter().GetValue()
			}
		}
	}

	speeds, err := pricing.EmbeddedSpeeds()
	if err != nil {
		t.Fatal(err)
	}
	wantCost, speedPremium := g.SpeedDollars(prices, speeds)
	wantPremium := map[[2]string]float64{}
	for k, v := range speedPremium {
		wantPremium[[2]string{k.Model, k.Speed}] = v
	}
	near := func(a, b float64) bool { return math.Abs(a-b) <= 1e-9*math.Max(1, math.Abs(b)) }
	// The models whose threads run at a speed, none of them past the
	// long-context threshold (the generator keeps them below it), so their
	// tokens are at one tier.
	for _, model := range []string{"claude-opus-4-6", "gpt-6-astra", "claude-haiku-4-5-20251001"} {
		if wantCost[model] <= 0 || !near(cost[model], wantCost[model]) {
			t.Errorf("%s: amp_cost_usd_total %.10f, want %.10f", model, cost[model], wantCost[model])
		}
	}
	for k, want := range wantPremium {
		if !near(premium[k], want) {
			t.Errorf("%s at %s: amp_speed_premium_usd_total %.10f, want %.10f", k[0], k[1], premium[k], want)
		}
	}
	if len(premium) != len(wantPremium) || len(wantPremium) != 2 {
		t.Errorf("premiums %v, want %v (fast Opus 4.6, plaid GPT-6 Astra)", premium, wantPremium)
	}
	t.Logf("Opus 4.6 $%.4f (premium $%.4f), GPT-6 Astra $%.4f (premium $%.4f)", cost["claude-opus-4-6"], premium[[2]string{"claude-opus-4-6", "fast"}],
		cost["gpt-6-astra"], premium[[2]string{"gpt-6-astra", "plaid"}])
}
