package pricing

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"sync"
)

// Regenerated with the Amp CLI that scripts/test-deps.sh pins
// (TestSpeedTableMatchesTheCLI checks it).
//go:generate ./gen/amp-cli.sh

//go:embed amp-speeds.json
var embeddedSpeeds []byte

// Speed is the speed an Amp model ran at. Amp bills a model run fast at a
// multiple of its list price, and plaid (ultrafast) at a larger one.
type Speed uint8

// The speeds, in the order the CLI ranks them.
const (
	Standard Speed = iota
	Fast
	Plaid
)

// Speeds are the speeds other than standard, the values of the speed
// label.
var Speeds = []Speed{Fast, Plaid}

// String is the speed's name as the CLI spells it.
func (s Speed) String() string {
	switch s {
	case Fast:
		return "fast"
	case Plaid:
		return "plaid"
	}
	return "standard"
}

// SpeedTable is the CLI's model table, reduced to the models that run
// faster than standard and what each speed costs them.
type SpeedTable struct {
	Source  string `json:"source"`
	Version string `json:"version"`
	Models  []struct {
		Provider string  `json:"provider"`
		Name     string  `json:"name"`
		Fast     float64 `json:"fast"`
		Plaid    float64 `json:"plaid"`
	} `json:"models"`
	byName map[string]int
}

// EmbeddedSpeeds returns the table compiled into the binary (generated
// from the Amp CLI's bundle by gen/amp-cli.sh; Version is the CLI's).
var EmbeddedSpeeds = sync.OnceValues(func() (*SpeedTable, error) {
	var t SpeedTable
	if err := json.Unmarshal(embeddedSpeeds, &t); err != nil {
		return nil, fmt.Errorf("embedded speed table: %w", err)
	}
	t.byName = make(map[string]int, 2*len(t.Models))
	for i, m := range t.Models {
		t.byName[m.Name] = i
		t.byName[m.Provider+"/"+m.Name] = i
	}
	return &t, nil
})

// dated is the date suffix of a pinned Anthropic model name
// (gpt-5-2025-08-07): the CLI finds such a name's model by the
// name without it.
var dated = regexp.MustCompile(`-\d{4}-\d{2}-\d{2}$`)

// Multiplier returns what a message of model asked to run at speed s is
// billed at, as a multiple of the model's list price, and the speed it is
// billed as. The CLI's rule: plaid is billed only on the models with a
// plaid multiplier (GPT-6 Astra) and means fast on the others; fast only
// on the models with a fast multiplier; anything else is standard, ×1 —
// as is a model the table does not know, a speed on it changes nothing.
func (t *SpeedTable) Multiplier(model string, s Speed) (float64, Speed) {
	if s == Standard || t == nil {
		return 1, Standard
	}
	i, ok := t.byName[model]
	if !ok {
		i, ok = t.byName[strings.TrimSuffix(model, dated.FindString(model))]
	}
	if !ok {
		return 1, Standard
	}
	m := &t.Models[i]
	switch {
	case s == Plaid && m.Plaid > 0:
		return m.Plaid, Plaid
	case m.Fast > 0:
		return m.Fast, Fast
	}
	return 1, Standard
}

// Scale returns the price times k, its long-context tier included.
func (p Price) Scale(k float64) Price {
	if k == 1 {
		return p
	}
	q := p
	q.Input, q.Output, q.CacheRead, q.CacheWrite = p.Input*k, p.Output*k, p.CacheRead*k, p.CacheWrite*k
	if p.Long != nil {
		long := p.Long.Scale(k)
		q.Long = &long
	}
	return q
}
