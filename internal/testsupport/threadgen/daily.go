package threadgen

import (
	"time"
)

// spentItem is one item's tokens at the item's own time.
type spentItem struct {
	ms     int64
	model  string
	tokens Tokens
}

// DailySpend is what the corpus spent per day of loc (YYYY-MM-DD) and
// model, each item in the day of its own time, known from what the
// generator wrote, not read back from it: an assistant message's usage at
// its usage timestamp; in a thread with a usage ledger, a ledger event's
// input and output, and the cache tokens of the message it bills, at the
// event's timestamp (written to the second), which may be hours before
// the thread was created (serverBehind). The same items as Spend; it
// generates every thread once.
func (g *Generator) DailySpend(loc *time.Location) map[string]map[string]Tokens {
	out := map[string]map[string]Tokens{}
	add := func(ms int64, model string, tok Tokens) {
		day := time.UnixMilli(ms).In(loc).Format(time.DateOnly)
		m := out[day]
		if m == nil {
			m = map[string]Tokens{}
			out[day] = m
		}
		s := m[model]
		s.Input += tok.Input
		s.Output += tok.Output
		s.CacheRead += tok.CacheRead
		s.CacheCreation += tok.CacheCreation
		m[model] = s
	}
	for i := range g.n {
		t := g.generate(i)
		for _, it := range t.spentAt {
			add(it.ms, it.model, it.tokens)
		}
		for _, e := range t.events {
			add(e.ms-e.ms%1000, e.model, Tokens{Input: e.in, Output: e.out})
		}
	}
	return out
}
