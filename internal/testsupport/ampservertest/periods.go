package ampservertest

import (
	"encoding/json"
	"maps"
	"math"
	"math/bits"
	"slices"
	"time"
)

// A thread's bill within a period. threadDisplayCostInfo takes start and
// end (ISO datetimes, end exclusive) and answers what the thread cost
// within them. The stand-in's bill of a thread is the canned one SetCost
// gives for the whole thread; the bill of a period is its share of it:
// every amount (totalCostUSD and each of costBreakdown's) is spread over
// the thread's messages in proportion to the tokens of their usage, each
// message's share falling at the message's time. The shares are whole
// 1e-10 USD, made by rounding the running sum down (share i is ⌊N·Wᵢ/W⌋ −
// ⌊N·Wᵢ₋₁/W⌋ for N the amount and Wᵢ the tokens up to message i), so they
// add up to the whole bill exactly: the bills of the days a thread was
// active sum to its bill. A thread whose messages carry no usage is billed
// at its creation.

// CostCall records one threadDisplayCostInfo request: the thread and the
// period as sent ("" when absent).
type CostCall struct {
	ThreadID   string
	Start, End string
}

// CostCalls returns the threadDisplayCostInfo requests served (and refused
// for their period) since the last Reset.
func (s *Server) CostCalls() []CostCall {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.costCalls)
}

// FailPeriods queues faults for the next threadDisplayCostInfo requests
// that ask for a period (a thread's whole bill is answered as usual).
func (s *Server) FailPeriods(f ...Fault) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.periodFaults = append(s.periodFaults, f...)
}

// period is the [start, end) of a threadDisplayCostInfo, epoch ms; open
// ends are the extremes.
type period struct{ start, end int64 }

// parsePeriod reads start and end as the server does: each, when given,
// an ISO 8601 datetime with its zone (RFC 3339, "Z" or an offset);
// anything else is refused.
func parsePeriod(start, end *string) (period, bool) {
	p := period{start: math.MinInt64, end: math.MaxInt64}
	for _, f := range []struct {
		s  *string
		to *int64
	}{{start, &p.start}, {end, &p.end}} {
		if f.s == nil {
			continue
		}
		t, err := time.Parse(time.RFC3339Nano, *f.s)
		if err != nil {
			return p, false
		}
		*f.to = t.UnixMilli()
	}
	return p, true
}

// usdUnit is the unit the stand-in splits bills in (the exporter's fixed
// point for USD).
const usdUnit = 1e10

// periodCost is the thread's bill (res, its whole one) within p. Callers
// hold s.mu.
func periodCost(t *Thread, res map[string]any, p period) map[string]any {
	times, weights := messageShares(t)
	var total uint64
	for _, w := range weights {
		total += w
	}
	// within reports the part of an amount of n units that falls in p.
	within := func(n uint64) uint64 {
		if total == 0 {
			if t.Created >= p.start && t.Created < p.end {
				return n
			}
			return 0
		}
		var sum, cum uint64
		for i, w := range weights {
			before := mulDiv(n, cum, total)
			cum += w
			if w > 0 && times[i] >= p.start && times[i] < p.end {
				sum += mulDiv(n, cum, total) - before
			}
		}
		return sum
	}
	scale := func(v any) any {
		f, ok := v.(float64)
		if !ok || f < 0 || math.IsInf(f, 0) || math.IsNaN(f) || f*usdUnit >= 1<<62 {
			return v // null, or not an amount: as it is
		}
		return float64(within(uint64(math.Round(f*usdUnit)))) / usdUnit
	}
	out := maps.Clone(res)
	out["totalCostUSD"] = scale(number(res["totalCostUSD"]))
	if b, ok := res["costBreakdown"].(map[string]any); ok {
		nb := maps.Clone(b)
		for k, v := range b {
			nb[k] = scale(number(v))
		}
		out["costBreakdown"] = nb
	}
	return out
}

// number gives a canned amount as a float64 (tests set them as float64 or
// int).
func number(v any) any {
	switch n := v.(type) {
	case int:
		return float64(n)
	case int64:
		return float64(n)
	}
	return v
}

// mulDiv is ⌊a·b/c⌋ for b ≤ c (so the quotient fits).
func mulDiv(a, b, c uint64) uint64 {
	hi, lo := bits.Mul64(a, b)
	q, _ := bits.Div64(hi, lo, c)
	return q
}

// message is what the stand-in reads of a message to bill it.
type message struct {
	CreatedAt string `json:"createdAt"`
	Meta      *struct {
		SentAt float64 `json:"sentAt"`
	} `json:"meta"`
	Usage *struct {
		Input         float64 `json:"inputTokens"`
		Output        float64 `json:"outputTokens"`
		CacheCreation float64 `json:"cacheCreationInputTokens"`
		CacheRead     float64 `json:"cacheReadInputTokens"`
		Timestamp     string  `json:"timestamp"`
	} `json:"usage"`
}

// messageShares returns each message's time (epoch ms) and the tokens of
// its usage. A message's time is its createdAt, else its usage's
// timestamp, else its meta.sentAt, else the nearest earlier message's,
// else the thread's creation. The shares of the messages read before are
// kept in t (messages are only appended to); callers hold s.mu.
func messageShares(t *Thread) (times []int64, weights []uint64) {
	times, weights = t.times, t.weights
	at := t.Created
	if n := len(times); n > 0 {
		at = times[n-1]
	}
	for _, raw := range t.messages[len(times):] {
		var m message
		_ = json.Unmarshal(raw, &m)
		var stamp string
		if m.Usage != nil {
			stamp = m.Usage.Timestamp
		}
		if ts, err := time.Parse(time.RFC3339Nano, m.CreatedAt); err == nil {
			at = ts.UnixMilli()
		} else if ts, err := time.Parse(time.RFC3339Nano, stamp); err == nil {
			at = ts.UnixMilli()
		} else if m.Meta != nil && m.Meta.SentAt > 0 {
			at = int64(m.Meta.SentAt)
		}
		var w uint64
		if u := m.Usage; u != nil {
			for _, n := range []float64{u.Input, u.Output, u.CacheCreation, u.CacheRead} {
				if n > 0 && n < 1<<40 {
					w += uint64(n)
				}
			}
		}
		times = append(times, at)
		weights = append(weights, w)
	}
	t.times, t.weights = times, weights
	return times, weights
}
