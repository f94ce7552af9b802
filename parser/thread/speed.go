package thread

import "github.com/amp-exporter/amp-exporter/internal/jsonscan"

// Speed is the speed an assistant message asked to run at, read from its
// usage's features. Amp bills a model run fast at a multiple of its list
// price and plaid at a larger one, on the models that have such a price
// (pricing.SpeedTable says which, and what a speed asked of another
// model is billed as). The values are pricing.Speed's.
type Speed uint8

// The speeds.
const (
	SpeedStandard Speed = iota
	SpeedFast
	SpeedPlaid
)

// String is the speed's name as the CLI spells it.
func (s Speed) String() string {
	switch s {
	case SpeedFast:
		return "fast"
	case SpeedPlaid:
		return "plaid"
	}
	return "standard"
}

// features reads a usage's features, a list of names, into a speed the
// way the CLI reads a thread's features: without "fast" standard, with it
// plaid when "plaid" is there too, else fast (the CLI writes fast as
// ["fast"] and plaid as ["fast","plaid"]). Other names (pro) and values
// that are not strings say nothing of speed.
func (p *Parser) features() Speed {
	sc := p.sc
	if sc.Peek() != jsonscan.Array {
		sc.Skip()
		return SpeedStandard
	}
	fast, plaid := false, false
	arr := sc.Array()
	for arr.Next() {
		// A prefix one byte longer than the names: a longer value is
		// neither, and a hostile one cannot reach the scanner's limit.
		v, _ := sc.StringPrefix(len("plaid") + 1)
		switch string(v) {
		case "fast":
			fast = true
		case "plaid":
			plaid = true
		}
	}
	switch {
	case fast && plaid:
		return SpeedPlaid
	case fast:
		return SpeedFast
	}
	return SpeedStandard
}
