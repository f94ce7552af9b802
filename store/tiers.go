package store

import (
	"math"

	"github.com/amp-exporter/amp-exporter/internal/sat"
	"github.com/amp-exporter/amp-exporter/pricing"
)

// Prices finds a model's price (a *pricing.Pricer), and what a speed
// multiplies it by.
type Prices interface {
	Lookup(model string) (pricing.Price, bool)
	Multiplier(model string, s pricing.Speed) (float64, pricing.Speed)
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

// speedPrices are a model's unit prices at the speed a message asked for
// (unitPrices): as, the speed it is billed as, and, for a faster speed,
// premium, what that speed adds to the list price per token.
type speedPrices struct {
	std, long         [4]int64
	premStd, premLong [4]int64
	as                pricing.Speed
	ok                bool
}

// unitPricesAt returns a model's unit prices at speed s. The premium is
// the difference of the two prices in units, so that list and premium
// add up to the speed's price to the unit.
func unitPricesAt(prices Prices, model string, s pricing.Speed) speedPrices {
	var u speedPrices
	u.std, u.long, u.ok = unitPrices(prices, model)
	if !u.ok || s == pricing.Standard {
		return u
	}
	mult, as := prices.Multiplier(model, s)
	if as == pricing.Standard || mult == 1 {
		return u
	}
	p, _ := prices.Lookup(model)
	u.as = as
	for tier, price := range []pricing.Price{p.Scale(mult), p.Scale(mult).LongPrices()} {
		in, out, cr, cw := price.PerToken()
		for i, usd := range []float64{in, out, cr, cw} {
			if tier == 0 {
				u.premStd[i] = max(fixed(FamCost, usd)-u.std[i], 0)
				u.std[i] += u.premStd[i]
			} else {
				u.premLong[i] = max(fixed(FamCost, usd)-u.long[i], 0)
				u.long[i] += u.premLong[i]
			}
		}
	}
	return u
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
	// premium is what a faster speed adds to the cost of the std and long
	// tiers' tokens (a speed family's rate; 0 for the token series').
	premium [2]int64
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

// chargePremium is what the speed added to the cost of a growth of delta
// tokens of which deltaLong are long-context.
func (r rate) chargePremium(delta, deltaLong int64) int64 {
	deltaLong = min(max(deltaLong, 0), delta)
	return sat.Add(tier{r.std.tokens, r.premium[0]}.charge(delta-deltaLong), tier{r.long.tokens, r.premium[1]}.charge(deltaLong))
}

// chargeGrowth prices the growth of each token series (grown, with its
// long-context part under FamTokensLong) at the rates the thread's items
// gave it, and hands the dollars and unpriced tokens to add (positive
// values only), with the token series they were charged for. The parts of
// a token series that ran at a faster speed (speed.go) grow under their
// own families, priced at their speed's rates; the token series' rate
// prices the rest.
func chargeGrowth(rates map[SeriesKey]rate, grown map[SeriesKey]int64, add func(k SeriesKey, v int64, tokens SeriesKey)) {
	for k, r := range rates {
		tokens := k
		var delta, deltaLong int64
		sf, faster := speedOfFamily(k.Fam)
		if faster {
			tokens = SeriesKey{FamTokens, k.L1, k.L2, k.Repo}
			delta, deltaLong = grown[k], grown[SeriesKey{sf.long, k.L1, k.L2, k.Repo}]
		} else {
			delta, deltaLong = grown[k], grown[SeriesKey{FamTokensLong, k.L1, k.L2, k.Repo}]
			for _, f := range speedFamilies {
				delta -= grown[SeriesKey{f.tokens, k.L1, k.L2, k.Repo}]
				deltaLong -= grown[SeriesKey{f.long, k.L1, k.L2, k.Repo}]
			}
		}
		if delta <= 0 {
			continue
		}
		// The thread's repository goes with its tokens' dollars.
		cost, unpriced := r.charge(delta, deltaLong)
		if cost > 0 {
			add(SeriesKey{FamCost, k.L1, "", k.Repo}, cost, tokens)
		}
		if unpriced > 0 {
			add(SeriesKey{FamUnpriced, k.L1, "", k.Repo}, unpriced, tokens)
		}
		if faster {
			if p := r.chargePremium(delta, deltaLong); p > 0 {
				add(SeriesKey{FamSpeedPremium, k.L1, sf.speed.String(), k.Repo}, p, tokens)
			}
		}
	}
}
