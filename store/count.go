package store

import (
	"github.com/amp-exporter/amp-exporter/internal/sat"
	"github.com/amp-exporter/amp-exporter/parser/agentmode"
	"github.com/amp-exporter/amp-exporter/parser/thread"
)

// Count returns what sum counts in a store that has never seen its thread:
// the growth of every series a first Apply of sum would add to the totals,
// cost and unpriced tokens priced at the store's prices. Nothing is
// recorded (the store's threads, files and totals stay as they are); label
// values fold through the store's label cap exactly as in Apply. Safe for
// concurrent use.
//
// The backfill counts each step of a thread's history this way: one call
// per step instead of one fresh store per step.
func (s *ThreadStore) Count(sum *thread.Summary) map[SeriesKey]int64 {
	s.mu.RLock()
	prices := s.prices
	s.mu.RUnlock()
	// The thread's repository as a first Apply would pin it (its
	// unreadable remote is counted by the live exporter, not here).
	res := s.contribute(sum, prices, nil, false, false, s.repos.value(s.labels, sum.Repository))
	c := res.series
	s.labels.FoldedElsewhere("model", sum.FoldedModels)
	s.labels.FoldedElsewhere("tool", sum.FoldedTools)
	s.labels.value("agent_mode", agentmode.Canonical(sum.AgentMode)) // the cap sees what Apply shows it
	// As in apply: dollars follow the tokens' growth, which in a store
	// without the thread is every token of the snapshot.
	chargeGrowth(res.rates, c, func(k SeriesKey, v int64, _ SeriesKey) { c[k] = sat.Add(c[k], v) })
	return c
}
