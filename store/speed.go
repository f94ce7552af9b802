package store

import (
	"github.com/amp-exporter/amp-exporter/parser/thread"
	"github.com/amp-exporter/amp-exporter/pricing"
)

// Speeds. Amp bills a message run fast or plaid at a multiple of its
// model's list price (pricing.SpeedTable). A thread's token series mix
// speeds, and dollars follow token growth (chargeGrowth): so that each
// growth is charged at the price of the speed it ran at, not at an
// average of the thread's, the tokens of each faster speed are counted
// in families of their own (FamTokensFast, FamTokensPlaid, with their
// long-context parts) whose growth is priced at that speed, and the
// token series' own rate prices only what is left, the standard tokens.
// What a speed adds to the list price goes to FamSpeedPremium as well.

// speedFamily is the pair of families that hold a faster speed's tokens.
type speedFamily struct {
	speed        pricing.Speed
	tokens, long Family
}

// speedFamilies are the faster speeds' families, indexed by speed - 1.
var speedFamilies = [...]speedFamily{
	{pricing.Fast, FamTokensFast, FamTokensFastLong},
	{pricing.Plaid, FamTokensPlaid, FamTokensPlaidLong},
}

// speedOfFamily is the speed whose tokens family f holds; ok is false for
// a family that is not one of them.
func speedOfFamily(f Family) (speedFamily, bool) {
	for _, sf := range speedFamilies {
		if sf.tokens == f {
			return sf, true
		}
	}
	return speedFamily{}, false
}

// pricedGrowth lists the families whose growth chargeGrowth prices: the
// token series, and the parts of them whose price differs.
var pricedGrowth = map[Family]bool{FamTokens: true, FamTokensLong: true,
	FamTokensFast: true, FamTokensFastLong: true, FamTokensPlaid: true, FamTokensPlaidLong: true}

// askedSpeed is the speed an item asked for, as pricing names it.
func askedSpeed(s thread.Speed) pricing.Speed {
	switch s {
	case thread.SpeedFast:
		return pricing.Fast
	case thread.SpeedPlaid:
		return pricing.Plaid
	}
	return pricing.Standard
}
