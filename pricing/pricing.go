// Package pricing turns token counts into estimated US dollars.
//
// The default table is embedded, generated from @pydantic/genai-prices
// (MIT; see gen/ and `go generate ./pricing`). A LiteLLM
// model_prices_and_context_window.json file can replace it, and per-model
// overrides win over both. Prices are list prices: they do not know about
// discounts, batch rates, or the context-size tiers some models charge
// above 200k input tokens (the base tier is used).
package pricing

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"
)

//go:generate ./gen/generate.sh

//go:embed genai-prices.json
var embeddedGenAI []byte

// Price is a model's price in USD per million tokens. A cache price that a
// table does not give falls back to the input price: Anthropic bills cache
// writes above input, but for providers whose cacheCreationInputTokens hold
// the uncached prompt (docs/formats/amp-threads.md §1.8) the input price is exactly right.
type Price struct {
	Input      float64 `yaml:"input" json:"input"`
	Output     float64 `yaml:"output" json:"output"`
	CacheRead  float64 `yaml:"cache_read" json:"cache_read"`
	CacheWrite float64 `yaml:"cache_creation" json:"cache_creation"`
	// HasCacheRead and HasCacheWrite say whether the cache prices were
	// given; when not, Input is used.
	HasCacheRead  bool `yaml:"-" json:"-"`
	HasCacheWrite bool `yaml:"-" json:"-"`
	// Long prices the tokens of each type beyond LongContextThreshold in
	// one request, for models that charge more for long context; nil when
	// the model does not.
	//
	// Anthropic bills a whole request at its long-context rates once the
	// prompt passes 200k tokens; ccusage and LiteLLM charge only the tokens
	// past 200k of each type at them. The exporter prices tiers the way
	// ccusage does, so that dollar figures agree with the tool users
	// compare against; the README says so.
	Long *Price `yaml:"-" json:"-"`
}

// LongContextThreshold is where long-context prices start (Anthropic's
// 200k tier; LiteLLM's *_above_200k_tokens fields).
const LongContextThreshold = 200_000

// LongPrices returns the long-context tier, or the price itself for a
// model without one.
func (p Price) LongPrices() Price {
	if p.Long != nil {
		return *p.Long
	}
	return p
}

// PerToken returns the USD price of one token of each type, in the order
// input, output, cache_read, cache_creation.
func (p Price) PerToken() (input, output, cacheRead, cacheWrite float64) {
	cr, cw := p.Input, p.Input
	if p.HasCacheRead {
		cr = p.CacheRead
	}
	if p.HasCacheWrite {
		cw = p.CacheWrite
	}
	return p.Input / 1e6, p.Output / 1e6, cr / 1e6, cw / 1e6
}

// Table finds a model's price.
type Table interface {
	Lookup(model string) (Price, bool)
}

// Pricer is the pricing in effect: overrides, then a base table.
type Pricer struct {
	base      Table
	overrides map[string]Price
	// speeds are Amp's multipliers for fast and plaid speeds; they apply
	// to the base table's prices and the overrides alike (an override is
	// a model's list price).
	speeds *SpeedTable
	// Source and Version describe the base table, for
	// amp_exporter_pricing_info.
	Source, Version string
}

// New returns a pricer over a base table (nil: no prices) with overrides.
// Speeds are the embedded table's (EmbeddedSpeeds): the Amp CLI's.
func New(base Table, source, version string, overrides map[string]Price) *Pricer {
	speeds, _ := EmbeddedSpeeds() // checked in and tested: it decodes
	return &Pricer{base: base, overrides: overrides, speeds: speeds, Source: source, Version: version}
}

// Multiplier returns what a message of model asked to run at speed s is
// billed at, as a multiple of its list price, and the speed it is billed
// as (SpeedTable.Multiplier).
func (p *Pricer) Multiplier(model string, s Speed) (float64, Speed) {
	if p == nil {
		return 1, Standard
	}
	return p.speeds.Multiplier(model, s)
}

// Lookup returns the price of model, or false when nothing knows it.
func (p *Pricer) Lookup(model string) (Price, bool) {
	if p == nil {
		return Price{}, false
	}
	if o, ok := p.overrides[model]; ok {
		return o, true
	}
	if p.base == nil {
		return Price{}, false
	}
	return p.base.Lookup(model)
}

// --- the embedded genai-prices table ---

type matchRule struct {
	Equals     *string     `json:"equals"`
	StartsWith *string     `json:"starts_with"`
	EndsWith   *string     `json:"ends_with"`
	Contains   *string     `json:"contains"`
	Regex      *string     `json:"regex"`
	Or         []matchRule `json:"or"`
	And        []matchRule `json:"and"`
	re         *regexp.Regexp
}

func (m *matchRule) compile() {
	if m.Regex != nil {
		// A few rules use look-ahead, which RE2 does not have; such a rule
		// matches nothing here (the models it guards have plainer rules
		// too, or go unpriced and are counted as such).
		if re, err := regexp.Compile(*m.Regex); err == nil {
			m.re = re
		}
	}
	for i := range m.Or {
		m.Or[i].compile()
	}
	for i := range m.And {
		m.And[i].compile()
	}
}

func (m *matchRule) matches(s string) bool {
	switch {
	case m.Equals != nil:
		return s == *m.Equals
	case m.StartsWith != nil:
		return strings.HasPrefix(s, *m.StartsWith)
	case m.EndsWith != nil:
		return strings.HasSuffix(s, *m.EndsWith)
	case m.Contains != nil:
		return strings.Contains(s, *m.Contains)
	case m.re != nil:
		return m.re.MatchString(s)
	case len(m.Or) > 0:
		for i := range m.Or {
			if m.Or[i].matches(s) {
				return true
			}
		}
		return false
	case len(m.And) > 0:
		for i := range m.And {
			if !m.And[i].matches(s) {
				return false
			}
		}
		return true
	}
	return false
}

type genaiPrice struct {
	Input          *float64 `json:"input_mtok"`
	Output         *float64 `json:"output_mtok"`
	CacheRead      *float64 `json:"cache_read_mtok"`
	CacheWrite     *float64 `json:"cache_write_mtok"`
	InputLong      *float64 `json:"input_above_200k_mtok"`
	OutputLong     *float64 `json:"output_above_200k_mtok"`
	CacheReadLong  *float64 `json:"cache_read_above_200k_mtok"`
	CacheWriteLong *float64 `json:"cache_write_above_200k_mtok"`
}

type genaiModel struct {
	ID     string    `json:"id"`
	Match  matchRule `json:"match"`
	Prices []struct {
		StartDate string     `json:"start_date"`
		Prices    genaiPrice `json:"prices"`
	} `json:"prices"`
}

type genaiProvider struct {
	ID         string       `json:"id"`
	ModelMatch *matchRule   `json:"model_match"`
	Models     []genaiModel `json:"models"`
}

// GenAIPrices is the genai-prices table.
type GenAIPrices struct {
	Source    string          `json:"source"`
	Version   string          `json:"version"`
	Providers []genaiProvider `json:"providers"`
	now       func() time.Time

	// memo remembers each model's answer for the day it was found on: a
	// lookup walks ~1,500 models' rules (~9 µs), and one runs for every
	// model of every thread rewrite and every stream-json line with usage.
	mu      sync.Mutex
	memo    map[string]memoPrice
	memoDay int // yyyymmdd, UTC
}

type memoPrice struct {
	p  Price
	ok bool
}

// maxMemo bounds the memo: model names come from the data.
const maxMemo = 4096

// Embedded returns the table compiled into the binary.
func Embedded(now func() time.Time) (*GenAIPrices, error) {
	var t GenAIPrices
	if err := json.Unmarshal(embeddedGenAI, &t); err != nil {
		return nil, fmt.Errorf("embedded price table: %w", err)
	}
	for pi := range t.Providers {
		p := &t.Providers[pi]
		if p.ModelMatch != nil {
			p.ModelMatch.compile()
		}
		for mi := range p.Models {
			p.Models[mi].Match.compile()
		}
	}
	if now == nil {
		now = time.Now
	}
	t.now = now
	return &t, nil
}

// Lookup implements Table. Providers whose model rule matches the model
// (claude → Anthropic) are searched first, in the table's order, then all
// others; within a provider the first matching model wins. A model with
// dated prices takes the latest whose start date has passed.
func (t *GenAIPrices) Lookup(model string) (Price, bool) {
	y, m, d := t.now().UTC().Date()
	day := y*10000 + int(m)*100 + d
	t.mu.Lock()
	if day != t.memoDay || len(t.memo) >= maxMemo {
		// Dated prices may change at midnight.
		t.memo, t.memoDay = map[string]memoPrice{}, day
	}
	hit, found := t.memo[model]
	t.mu.Unlock()
	if found {
		return hit.p, hit.ok
	}
	p, ok := t.lookup(model)
	t.mu.Lock()
	if t.memoDay == day {
		t.memo[model] = memoPrice{p, ok}
	}
	t.mu.Unlock()
	return p, ok
}

func (t *GenAIPrices) lookup(model string) (Price, bool) {
	for pass := 0; pass < 2; pass++ {
		for pi := range t.Providers {
			p := &t.Providers[pi]
			preferred := p.ModelMatch != nil && p.ModelMatch.matches(model)
			if (pass == 0) != preferred {
				continue
			}
			for mi := range p.Models {
				m := &p.Models[mi]
				if m.Match.matches(model) {
					return t.price(m)
				}
			}
		}
	}
	return Price{}, false
}

func (t *GenAIPrices) price(m *genaiModel) (Price, bool) {
	today := t.now().UTC().Format("2006-01-02")
	var best *genaiPrice
	bestDate := ""
	for i := range m.Prices {
		c := &m.Prices[i]
		if c.StartDate != "" && c.StartDate > today {
			continue
		}
		if best == nil || c.StartDate >= bestDate {
			best, bestDate = &c.Prices, c.StartDate
		}
	}
	if best == nil || (best.Input == nil && best.Output == nil) {
		return Price{}, false
	}
	return best.price(1), true
}

// price builds a Price from prices per million tokens times scale, the
// long-context tier's missing prices taken from the standard ones.
func (g genaiPrice) price(scale float64) Price {
	p := MakePrice(times(g.Input, scale), times(g.Output, scale), times(g.CacheRead, scale), times(g.CacheWrite, scale))
	if g.InputLong != nil || g.OutputLong != nil || g.CacheReadLong != nil || g.CacheWriteLong != nil {
		long := MakePrice(times(or(g.InputLong, g.Input), scale), times(or(g.OutputLong, g.Output), scale),
			times(or(g.CacheReadLong, g.CacheRead), scale), times(or(g.CacheWriteLong, g.CacheWrite), scale))
		p.Long = &long
	}
	return p
}

func times(v *float64, scale float64) *float64 {
	if v == nil || scale == 1 {
		return v
	}
	x := *v * scale
	return &x
}

func or(a, b *float64) *float64 {
	if a != nil {
		return a
	}
	return b
}

// MakePrice builds a Price from per-million prices; an absent cache price
// falls back to the input price (see PerToken).
func MakePrice(input, output, cacheRead, cacheWrite *float64) Price {
	var p Price
	if input != nil {
		p.Input = *input
	}
	if output != nil {
		p.Output = *output
	}
	if cacheRead != nil {
		p.CacheRead, p.HasCacheRead = *cacheRead, true
	}
	if cacheWrite != nil {
		p.CacheWrite, p.HasCacheWrite = *cacheWrite, true
	}
	return p
}

// --- LiteLLM's model_prices_and_context_window.json ---

// LiteLLM is a price table in LiteLLM's format.
type LiteLLM struct {
	models map[string]Price
	// bySuffix finds provider-prefixed keys ("anthropic/claude-…",
	// "fireworks_ai/accounts/fireworks/models/…") by what follows a slash.
	bySuffix map[string]Price
}

type litellmEntry struct {
	Input          *float64 `json:"input_cost_per_token"`
	Output         *float64 `json:"output_cost_per_token"`
	CacheRead      *float64 `json:"cache_read_input_token_cost"`
	CacheWrite     *float64 `json:"cache_creation_input_token_cost"`
	InputLong      *float64 `json:"input_cost_per_token_above_200k_tokens"`
	OutputLong     *float64 `json:"output_cost_per_token_above_200k_tokens"`
	CacheReadLong  *float64 `json:"cache_read_input_token_cost_above_200k_tokens"`
	CacheWriteLong *float64 `json:"cache_creation_input_token_cost_above_200k_tokens"`
}

// ParseLiteLLM parses a model_prices_and_context_window.json document.
// Entries without token prices (images, audio, the sample_spec) are
// skipped.
func ParseLiteLLM(data []byte) (*LiteLLM, error) {
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(data, &raw); err != nil {
		return nil, fmt.Errorf("LiteLLM price file: %w", err)
	}
	t := &LiteLLM{models: map[string]Price{}, bySuffix: map[string]Price{}}
	// In name order, so that when several provider-prefixed keys end in the
	// same model the same one wins on every start, not whichever the map
	// walk met first.
	for _, name := range slices.Sorted(maps.Keys(raw)) {
		msg := raw[name]
		var e litellmEntry
		if err := json.Unmarshal(msg, &e); err != nil || (e.Input == nil && e.Output == nil) {
			continue
		}
		// Same fields as genai-prices, priced per token rather than per
		// million.
		p := genaiPrice(e).price(1e6)
		t.models[name] = p
		for i, c := range name {
			if c != '/' {
				continue
			}
			if suffix := name[i+1:]; suffix != "" {
				if _, exists := t.bySuffix[suffix]; !exists {
					t.bySuffix[suffix] = p
				}
			}
		}
	}
	if len(t.models) == 0 {
		return nil, fmt.Errorf("LiteLLM price file: no model with input_cost_per_token or output_cost_per_token")
	}
	return t, nil
}

// Lookup implements Table: the exact key, then a provider-prefixed key
// ending in the model's name.
func (t *LiteLLM) Lookup(model string) (Price, bool) {
	if p, ok := t.models[model]; ok {
		return p, true
	}
	if p, ok := t.bySuffix[model]; ok {
		return p, true
	}
	if i := strings.LastIndex(model, "/"); i >= 0 {
		if p, ok := t.models[model[i+1:]]; ok {
			return p, true
		}
	}
	return Price{}, false
}
