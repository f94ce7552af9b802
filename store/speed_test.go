package store

import (
	"math"
	"testing"
	"time"

	"github.com/amp-exporter/amp-exporter/internal/testsupport/threadgen"
	"github.com/amp-exporter/amp-exporter/parser/thread"
	"github.com/amp-exporter/amp-exporter/pricing"
)

// pricesWithAstra are the embedded prices, with a list price for GPT-6 Astra
// (the one plaid model), which the embedded table does not know.
func pricesWithAstra(t *testing.T) *pricing.Pricer {
	t.Helper()
	tab, err := pricing.Embedded(func() time.Time { return fixedNow })
	if err != nil {
		t.Fatal(err)
	}
	in, out, cr := 2.0, 16.0, 0.2
	return pricing.New(tab, "genai-prices", "test", map[string]pricing.Price{"gpt-6-astra": pricing.MakePrice(&in, &out, &cr, nil)})
}

type speedItem struct {
	model  string
	speed  thread.Speed
	tokens thread.Tokens
	over   thread.Tokens
}

func speedItems(items []speedItem) []thread.Item {
	out := make([]thread.Item, len(items))
	for i, it := range items {
		out[i] = thread.Item{Key: thread.ItemKey(thread.ItemMessage, uint64(i+1)), Role: thread.RoleAssistant,
			Model: it.model, StopReason: "end_turn", Tokens: it.tokens, Over: it.over, Speed: it.speed,
			At: fixedNow.Add(time.Duration(i-len(items)) * time.Hour).UnixMilli()}
	}
	return out
}

// dollars is what items cost at the CLI's multiple of their model's list
// price, worked out here from USD per million tokens, and what the speed
// added to it, by model and speed.
func dollars(t *testing.T, prices *pricing.Pricer, items []speedItem) (cost map[string]float64, premium map[[2]string]float64) {
	t.Helper()
	speeds, err := pricing.EmbeddedSpeeds()
	if err != nil {
		t.Fatal(err)
	}
	cost, premium = map[string]float64{}, map[[2]string]float64{}
	for _, it := range items {
		p, ok := prices.Lookup(it.model)
		if !ok {
			t.Fatalf("%s: no price", it.model)
		}
		mult, as := speeds.Multiplier(it.model, pricing.Speed(it.speed))
		cr, cw := p.CacheRead, p.CacheWrite
		if !p.HasCacheWrite {
			cw = p.Input
		}
		l := p.LongPrices()
		lcw := l.CacheWrite
		if !l.HasCacheWrite {
			lcw = l.Input
		}
		std := func(n, over int64, price, long float64) float64 { return float64(n-over)*price + float64(over)*long }
		list := (std(it.tokens.Input, it.over.Input, p.Input, l.Input) + std(it.tokens.Output, it.over.Output, p.Output, l.Output) +
			std(it.tokens.CacheRead, it.over.CacheRead, cr, l.CacheRead) + std(it.tokens.CacheCreation, it.over.CacheCreation, cw, lcw)) / 1e6
		cost[it.model] += list * mult
		if as != pricing.Standard {
			premium[[2]string{it.model, as.String()}] += list * (mult - 1)
		}
	}
	return cost, premium
}

func usd(v int64) float64 { return float64(v) / scaleUSD }

func near(a, b float64) bool { return math.Abs(a-b) <= 1e-9*math.Max(1, math.Abs(b)) }

// Fast and plaid messages cost their model's list price times the CLI's
// multiplier for the speed, in amp_cost_usd_total; the part the speed adds
// is in amp_speed_premium_usd_total. The thread grows a message at a time,
// standard and fast tokens of one model in the same token series: each
// growth is charged at its own speed's price, not at the thread's average.
func TestFastAndPlaidArePricedAtTheirMultiples(t *testing.T) {
	prices := pricesWithAstra(t)
	items := []speedItem{
		{"claude-opus-4-6", thread.SpeedStandard, thread.Tokens{Input: 1200, Output: 300, CacheRead: 40_000, CacheCreation: 2000}, thread.Tokens{}},
		{"claude-opus-4-6", thread.SpeedFast, thread.Tokens{Input: 900, Output: 500, CacheRead: 41_000, CacheCreation: 1500}, thread.Tokens{}},
		// Past the long-context threshold: the long tier, times six.
		{"claude-opus-4-6", thread.SpeedFast, thread.Tokens{Input: 210_000, Output: 800, CacheRead: 3000}, thread.Tokens{Input: 10_000}},
		{"claude-opus-4-6", thread.SpeedStandard, thread.Tokens{Input: 100, Output: 100, CacheRead: 50_000}, thread.Tokens{}},
		// Plaid on a model without a plaid price is fast.
		{"claude-opus-4-6", thread.SpeedPlaid, thread.Tokens{Input: 700, Output: 90}, thread.Tokens{}},
		{"gpt-6-astra", thread.SpeedPlaid, thread.Tokens{Input: 5000, Output: 2500, CacheRead: 9000}, thread.Tokens{}},
		{"gpt-6-astra", thread.SpeedFast, thread.Tokens{Input: 4000, Output: 1000}, thread.Tokens{}},
		{"gpt-6-astra", thread.SpeedStandard, thread.Tokens{Input: 3000, Output: 700}, thread.Tokens{}},
		// No fast price: standard, whatever the message asked.
		{"claude-haiku-4-5-20251001", thread.SpeedFast, thread.Tokens{Input: 800, Output: 80}, thread.Tokens{}},
	}
	wantCost, wantPremium := dollars(t, prices, items)
	if wantCost["claude-opus-4-6"] <= 0 || len(wantPremium) != 3 {
		t.Fatalf("the case is not what it means to be: %v %v", wantCost, wantPremium)
	}
	for _, grow := range []bool{false, true} {
		s := NewThreadStore(StoreOptions{Now: func() time.Time { return fixedNow }})
		s.SetPrices(prices)
		all := speedItems(items)
		if grow {
			for n := 1; n < len(all); n++ {
				s.Apply("/d/T-1.json", FileVersion{Size: int64(n)}, thread.FromItems("T-1", "medium", append([]thread.Item(nil), all[:n]...)))
			}
		}
		s.Apply("/d/T-1.json", FileVersion{Size: int64(len(all))}, thread.FromItems("T-1", "medium", all))
		totals := s.Snapshot().totals
		for model, want := range wantCost {
			if got := usd(totals[SeriesKey{FamCost, model, "", ""}]); !near(got, want) {
				t.Errorf("grown a message at a time %v: %s costs $%.10f, want $%.10f", grow, model, got, want)
			}
		}
		for k, want := range wantPremium {
			if got := usd(totals[SeriesKey{FamSpeedPremium, k[0], k[1], ""}]); !near(got, want) {
				t.Errorf("grown a message at a time %v: %s at %s adds $%.10f, want $%.10f", grow, k[0], k[1], got, want)
			}
		}
		for k, v := range totals {
			if k.Fam == FamSpeedPremium && wantPremium[[2]string{k.L1, k.L2}] == 0 {
				t.Errorf("a premium of %v for %s at %s", v, k.L1, k.L2)
			}
		}
		// The ledger's dollars add up to the counter's.
		var led int64
		for _, e := range s.Ledger() {
			led += e.Cost
		}
		var counted int64
		for k, v := range totals {
			if k.Fam == FamCost {
				counted += v
			}
		}
		if led != counted {
			t.Errorf("grown a message at a time %v: the ledger's dollars %d, the counters' %d", grow, led, counted)
		}
	}
}

// Standard-speed messages cost what they cost before speeds were read, to
// the unit, and give no premium series.
func TestStandardSpeedIsListPrice(t *testing.T) {
	prices := pricesWithAstra(t)
	items := []speedItem{
		{"claude-opus-4-6", thread.SpeedStandard, thread.Tokens{Input: 1200, Output: 300, CacheRead: 40_000, CacheCreation: 2000}, thread.Tokens{}},
		{"claude-opus-4-6", thread.SpeedStandard, thread.Tokens{Input: 250_000, Output: 300}, thread.Tokens{Input: 50_000}},
	}
	s := NewThreadStore(StoreOptions{Now: func() time.Time { return fixedNow }})
	s.SetPrices(prices)
	s.Apply("/d/T-1.json", FileVersion{Size: 1}, thread.FromItems("T-1", "medium", speedItems(items)))
	wantCost, _ := dollars(t, prices, items)
	for k, v := range s.Snapshot().totals {
		switch k.Fam {
		case FamSpeedPremium, FamTokensFast, FamTokensFastLong, FamTokensPlaid, FamTokensPlaidLong:
			t.Errorf("series %v = %d for standard messages", k, v)
		case FamCost:
			if got := usd(v); !near(got, wantCost[k.L1]) {
				t.Errorf("%s costs $%.10f, want $%.10f", k.L1, got, wantCost[k.L1])
			}
		}
	}
}

// A restart on saved state, re-reading the same threads, adds nothing:
// the speeds' token families are kept with the thread, so their dollars
// are not charged again; and a store that keeps no pins counts the same.
func TestSpeedsSurviveRestart(t *testing.T) {
	g := threadgen.New(threadgen.Options{Threads: 30, TotalBytes: 30 * 20_000, Seed: 11, Speeds: true})
	var sums []*thread.Summary
	for i := range g.Len() {
		_, data := g.Thread(i)
		th, err := thread.NewParser().ParseBytes(data)
		if err != nil {
			t.Fatal(err)
		}
		sums = append(sums, thread.Summarize(th))
	}
	prices := pricesWithAstra(t)
	now := func() time.Time { return fixedNow }
	s := NewThreadStore(StoreOptions{Now: now})
	once := NewThreadStore(StoreOptions{Now: now, AppliedOnce: true})
	applyAll(prices, sums, s, once)
	want := s.Snapshot().Totals()
	premium := 0
	for k := range want {
		if k.Fam == FamSpeedPremium {
			premium++
		}
	}
	if premium == 0 {
		t.Fatal("the corpus gives no premium")
	}
	compareTotals(t, once.Snapshot().Totals(), want, "kept no pins", "kept them")
	r := NewThreadStore(StoreOptions{Now: now})
	if err := r.Import(s.Export()); err != nil {
		t.Fatal(err)
	}
	applyAll(prices, sums, r)
	compareTotals(t, r.Snapshot().Totals(), want, "after a restart", "before")
}
