package threadgen

// Speeds (Options.Speeds): Amp runs a thread fast or plaid when asked
// (`amp --fast`, the speed toggle), and the server's usage of each
// assistant message names the speed in its features, as the CLI writes a
// speed: fast as ["fast"], plaid as ["fast","plaid"]. The generator gives
// some threads billed by their messages a speed: fast from the start or
// from some message on (the toggle mid-thread), and plaid on GPT-6 Astra,
// the one model with a plaid price; plaid asked of another model, or fast
// of a model without a fast price, is billed at standard speed or fast,
// which the exporter must work out as the CLI does.

import "github.com/amp-exporter/amp-exporter/pricing"

// Speed names, as SpeedSpend keys them (the CLI's).
const (
	SpeedStandard = "standard"
	SpeedFast     = "fast"
	SpeedPlaid    = "plaid"
)

// mAstra is GPT-6 Astra, which runs plaid; its context is kept below the
// long-context threshold, so that its tokens are all at one price tier.
var mAstra = &modelInfo{"gpt-6-astra", 200000, true, 2, 16, 2, 0.2}

// speedPlan is when a thread asks for which speed.
type speedPlan struct {
	speed string // the speed asked from message from on; "" for none
	from  int    // the first assistant message (0-based) asked at speed
}

// planSpeed gives thread t its speeds, from its own random stream so that
// the rest of the thread is drawn as without speeds. Only threads billed
// by their messages: a ledger names no speed.
func (g *Generator) planSpeed(t *threadBuilder, i int) {
	if !g.speeds || t.ledger {
		return
	}
	r := g.rng(i, 8)
	switch u := r.Float64(); {
	case u < 0.35:
	case t.model.openai && u < 0.75:
		t.model = mAstra
		t.plan = speedPlan{SpeedPlaid, r.IntN(3)}
	case u < 0.60:
		t.plan = speedPlan{SpeedFast, 0}
	default:
		// Turned on mid-thread, or plaid asked of a model that has only
		// a fast price.
		t.plan = speedPlan{SpeedFast, 1 + r.IntN(4)}
		if r.IntN(3) == 0 {
			t.plan.speed = SpeedPlaid
		}
	}
}

// speedNow is the speed the thread asks for its next assistant message.
func (t *threadBuilder) speedNow() string {
	if t.plan.speed == "" || t.nAssist < t.plan.from {
		return ""
	}
	return t.plan.speed
}

// writeFeatures writes a usage's features as the CLI writes a speed.
func (w *jsonWriter) writeFeatures(speed string) {
	if speed == "" {
		return
	}
	w.keyArray("features")
	w.elemString(SpeedFast)
	if speed == SpeedPlaid {
		w.elemString(SpeedPlaid)
	}
	w.endArr()
}

// ModelSpeed keys tokens by model and the speed their messages asked for.
type ModelSpeed struct{ Model, Speed string }

// SpeedSpend is what the corpus spent by model and the speed its messages
// asked for (SpeedStandard for those that asked none), known from what
// the generator wrote: the tokens of Spend, split by speed. It generates
// every thread once.
func (g *Generator) SpeedSpend() map[ModelSpeed]Tokens {
	out := map[ModelSpeed]Tokens{}
	for i := range g.n {
		t := g.generate(i)
		for k, tok := range t.spentSpeed {
			out[k] = out[k].plus(tok)
		}
		for _, e := range t.events {
			k := ModelSpeed{e.model, SpeedStandard}
			out[k] = out[k].plus(Tokens{Input: e.in, Output: e.out})
		}
	}
	return out
}

func (a Tokens) plus(b Tokens) Tokens {
	return Tokens{a.Input + b.Input, a.Output + b.Output, a.CacheRead + b.CacheRead, a.CacheCreation + b.CacheCreation}
}

// tallySpeed records an item's tokens under its model and speed.
func (t *threadBuilder) tallySpeed(model, speed string, tok Tokens) {
	if speed == "" {
		speed = SpeedStandard
	}
	if t.spentSpeed == nil {
		t.spentSpeed = map[ModelSpeed]Tokens{}
	}
	k := ModelSpeed{model, speed}
	t.spentSpeed[k] = t.spentSpeed[k].plus(tok)
}

// SpeedDollars prices SpeedSpend as Amp prices it, for tests to hold the
// exporter's estimate to: per model, each speed's tokens at the list price
// (a cache write without a price of its own at the input price) times the
// multiplier of the speed the model is billed at; and per model and billed
// speed, what the multipliers added (premium). Models the prices do not
// know are left out.
func (g *Generator) SpeedDollars(prices *pricing.Pricer, speeds *pricing.SpeedTable) (cost map[string]float64, premium map[ModelSpeed]float64) {
	cost, premium = map[string]float64{}, map[ModelSpeed]float64{}
	asked := map[string]pricing.Speed{SpeedStandard: pricing.Standard, SpeedFast: pricing.Fast, SpeedPlaid: pricing.Plaid}
	for k, tok := range g.SpeedSpend() {
		lp, ok := prices.Lookup(k.Model)
		if !ok {
			continue
		}
		cw := lp.CacheWrite
		if !lp.HasCacheWrite {
			cw = lp.Input
		}
		list := (float64(tok.Input)*lp.Input + float64(tok.Output)*lp.Output + float64(tok.CacheRead)*lp.CacheRead + float64(tok.CacheCreation)*cw) / 1e6
		mult, billed := speeds.Multiplier(k.Model, asked[k.Speed])
		cost[k.Model] += list * mult
		if billed != pricing.Standard {
			premium[ModelSpeed{k.Model, billed.String()}] += list * (mult - 1)
		}
	}
	return cost, premium
}
