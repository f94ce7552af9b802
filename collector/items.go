package collector

import (
	"github.com/amp-exporter/amp-exporter/parser/thread"
)

// contribute turns a summary into series item by item: each item's values
// go to the labels it is pinned to (pins.go), and an item seen for the first
// time is pinned to the labels it carries now, folded by the label cap. Token
// series are priced with prices, at the price of the model each item names.
// It returns the thread's pins with the new ones; base is never changed.
func (s *ThreadStore) contribute(sum *thread.Summary, prices Prices, base *pins) (contribution, map[seriesKey]rate, *pins) {
	if sum.Items == nil {
		c, rates := s.contributeTotals(sum, prices)
		return c, rates, base
	}
	c := make(contribution, 24+len(sum.Tokens)*12+len(sum.ToolCalls)*2)
	rates := make(map[seriesKey]rate, 4*len(sum.Tokens))
	add := func(f family, l1, l2 string, v int64) {
		if v > 0 {
			k := seriesKey{f, l1, l2}
			c[k] = satAdd(c[k], v)
		}
	}
	var credits map[string]float64
	// Unit prices per model the items name; a thread names a few.
	type unit struct {
		model     string
		std, long [4]int64
		ok        bool
	}
	var units []unit
	priceOf := func(model string) *unit {
		for i := range units {
			if units[i].model == model {
				return &units[i]
			}
		}
		u := unit{model: model}
		u.std, u.long, u.ok = unitPrices(prices, model)
		units = append(units, u)
		return &units[len(units)-1]
	}
	spend := func(label string, it *thread.Item) {
		if it.HasCredits {
			if credits == nil {
				credits = map[string]float64{}
			}
			credits[label] += it.Credits
		}
		if it.Tokens == (thread.Tokens{}) {
			return
		}
		raw := it.Model
		if raw == "" {
			raw = thread.UnknownModel
		}
		u := priceOf(raw)
		ns := [4]int64{it.Tokens.Input, it.Tokens.Output, it.Tokens.CacheRead, it.Tokens.CacheCreation}
		over := [4]int64{it.Over.Input, it.Over.Output, it.Over.CacheRead, it.Over.CacheCreation}
		for i, n := range ns {
			if n <= 0 {
				continue
			}
			nl := min(max(over[i], 0), n)
			k := seriesKey{famTokens, label, TokenTypes[i]}
			add(famTokens, label, TokenTypes[i], n)
			add(famTokensLong, label, TokenTypes[i], nl)
			r := rates[k]
			r.std.tokens = satAdd(r.std.tokens, n-nl)
			r.long.tokens = satAdd(r.long.tokens, nl)
			if u.ok {
				r.std.cost = satAdd(r.std.cost, satMul(n-nl, u.std[i]))
				r.long.cost = satAdd(r.long.cost, satMul(nl, u.long[i]))
			} else {
				r.unpriced = satAdd(r.unpriced, n)
			}
			rates[k] = r
		}
	}

	tt := &s.tuples
	pg := newPinning(base)
	for i := range sum.Items {
		it := &sum.Items[i]
		t, pinned := pg.lookup(tt, it.Key)
		if t.copied {
			continue
		}
		if !pinned && it.Copied {
			pg.pin(tt, it.Key, pinTuple{copied: true})
			continue
		}
		switch kind := it.Kind(); {
		case it.IsMessage() && it.Role == thread.RoleUser:
			add(famMessages, "user", "", 1)
			if it.Prompt {
				add(famPrompts, "", "", 1)
			}
		case it.IsMessage() && it.Role == thread.RoleAssistant:
			add(famMessages, "assistant", "", 1)
			changed := false
			if !pinned {
				if it.Model == "" && it.StopReason == "" {
					// Still moving and naming no model yet: its model-labeled
					// values wait until it names one or finishes, so that
					// they are not pinned to `unknown` for good.
					continue
				}
				t.a, changed = s.labels.value("model", it.Model), true
			}
			if t.b == "" && it.StopReason != "" {
				t.b, changed = s.labels.value("stop_reason", it.StopReason), true
			}
			if t.c == "" && it.HasRatio {
				t.c, changed = bucketIndex(ContextBuckets, it.Ratio), true
			}
			if changed {
				pg.pin(tt, it.Key, t)
			}
			spend(t.a, it)
			if t.b != "" {
				add(famFinished, t.a, t.b, 1)
			}
			if t.c != "" {
				add(famContextBucket, t.a, t.c, 1)
				if it.HasRatio {
					add(famContextSum, t.a, "", fixed(famContextSum, it.Ratio))
				}
			}
		case it.IsLedger():
			if !pinned {
				t = pinTuple{a: s.labels.value("model", it.Model)}
				pg.pin(tt, it.Key, t)
			}
			spend(t.a, it)
		case kind == thread.ItemTool:
			if !pinned {
				t = pinTuple{a: s.labels.value("tool", it.Tool), b: it.Status}
				pg.pin(tt, it.Key, t)
			}
			add(famToolCalls, t.a, t.b, 1)
		case kind == thread.ItemExchange:
			if !pinned {
				t = pinTuple{c: bucketIndex(ExchangeBuckets, it.Seconds)}
				pg.pin(tt, it.Key, t)
			}
			add(famExchangeBucket, "", t.c, 1)
			add(famExchangeSum, "", "", fixed(famExchangeSum, it.Seconds))
		}
	}
	for label, v := range credits {
		add(famCredits, label, "", fixed(famCredits, v))
	}
	return c, rates, pg.result()
}

// PinBytes returns the memory held by the pinned labels of every thread
// (the per-thread tables; the store-wide tuple table is small and shared).
func (s *ThreadStore) PinBytes() (total, threads int) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	for _, rec := range s.threads {
		total += rec.pins.bytes()
	}
	return total, len(s.threads)
}
