package store

import (
	"math"

	"github.com/amp-exporter/amp-exporter/internal/sat"
	"github.com/amp-exporter/amp-exporter/pricing"
)

// Prices finds a model's price (a *pricing.Pricer).
type Prices interface {
	Lookup(model string) (pricing.Price, bool)
}

// unitPrices returns a model's price per token in 1e-10 USD for its four
// token types, standard and beyond the long-context threshold, or
// ok=false when nothing prices the model.
func unitPrices(prices Prices, model string) (std, long [4]int64, ok bool) {
	if prices == nil {
		return std, long, false
	}
	p, ok := prices.Lookup(model)
	if !ok {
		return std, long, false
	}
	for tier, price := range []pricing.Price{p, p.LongPrices()} {
		in, out, cr, cw := price.PerToken()
		for i, usd := range []float64{in, out, cr, cw} {
			if tier == 0 {
				std[i] = fixed(FamCost, usd)
			} else {
				long[i] = fixed(FamCost, usd)
			}
		}
	}
	return std, long, true
}

// tier is what a (folded) token series' tokens of one price tier cost in
// 1e-10 USD, in the snapshot they were computed from. Series folded into
// "other" mix models, so growth is charged pro rata; for one model the
// division is exact.
type tier struct{ tokens, cost int64 }

func (t tier) charge(delta int64) int64 {
	if t.tokens <= 0 || delta <= 0 {
		return 0
	}
	if t.cost%t.tokens == 0 {
		return sat.Mul(delta, t.cost/t.tokens)
	}
	return int64(math.Round(float64(delta) * float64(t.cost) / float64(t.tokens)))
}

// rate prices a token series: its standard and long-context tiers, and how
// many of its tokens belong to models without a price.
type rate struct {
	std, long tier
	unpriced  int64
}

// charge prices a growth of delta tokens of which deltaLong are
// long-context.
func (r rate) charge(delta, deltaLong int64) (cost, unpriced int64) {
	deltaLong = min(max(deltaLong, 0), delta)
	cost = sat.Add(r.std.charge(delta-deltaLong), r.long.charge(deltaLong))
	if all := r.std.tokens + r.long.tokens; all > 0 && r.unpriced > 0 && delta > 0 {
		if r.unpriced == all {
			unpriced = delta
		} else {
			unpriced = int64(math.Round(float64(delta) * float64(r.unpriced) / float64(all)))
		}
	}
	return cost, unpriced
}

// chargeGrowth prices the growth of each token series (grown, with its
// long-context part under FamTokensLong) at the rates the thread's items
// gave it, and hands the dollars and unpriced tokens to add (positive
// values only), with the token series they were charged for.
func chargeGrowth(rates map[SeriesKey]rate, grown map[SeriesKey]int64, add func(k SeriesKey, v int64, tokens SeriesKey)) {
	for k, r := range rates {
		if delta := grown[k]; delta > 0 {
			// The thread's repository goes with its tokens' dollars.
			cost, unpriced := r.charge(delta, grown[SeriesKey{FamTokensLong, k.L1, k.L2, k.Repo}])
			if cost > 0 {
				add(SeriesKey{FamCost, k.L1, "", k.Repo}, cost, k)
			}
			if unpriced > 0 {
				add(SeriesKey{FamUnpriced, k.L1, "", k.Repo}, unpriced, k)
			}
		}
	}
}
