package collector

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/amp-exporter/amp-exporter/parser/amyturn"
	"github.com/amp-exporter/amp-exporter/store"
)

// AmyCollector exposes the amy_* families.
type AmyCollector struct {
	store *store.AmyStore
}

// NewAmyCollector returns the collector.
func NewAmyCollector(s *store.AmyStore) *AmyCollector {
	return &AmyCollector{store: s}
}

// Describe implements prometheus.Collector: every row of an Amy store
// family, and the gauges set from the snapshot.
func (c *AmyCollector) Describe(ch chan<- *prometheus.Desc) {
	for i := range Metrics {
		if f := Metrics[i].Family; f != "" && store.AmyFamily(f) {
			ch <- descs[Metrics[i].Name]
		}
	}
	describe(ch, NameAmyTurnsInFlight, NameAmyStreamUp)
}

// amyEvents are the event names whose series start at zero.
var amyEvents = append(append([]string{}, amyturn.Catalogue...), amyturn.EventUnknown)

// Collect implements prometheus.Collector.
func (c *AmyCollector) Collect(ch chan<- prometheus.Metric) {
	r := newRenderer(ch)
	for _, u := range c.store.Snapshot() {
		t, n := u.Totals, u.Name
		r.series(t, n)
		// Known series start at zero.
		for _, f := range []store.Family{store.FamAmyStarted, store.FamAmyCost, store.FamAmyFactIssues,
			store.FamAmyMemory, store.FamAmyCostWarnings, store.FamAmyDuplicates, store.FamAmyBadEvents} {
			r.zero(t, f, n)
		}
		r.zero(t, store.FamAmyFinished, n, amyturn.OutcomeCompleted, amyturn.OutcomeFailed)
		r.zero(t, store.FamAmyValidations, n, amyturn.VerdictValidated, amyturn.VerdictConditional, amyturn.VerdictRejected)
		r.zero(t, store.FamAmyGates, n, "passed", "failed")
		r.zero(t, store.FamAmyEvents, n, amyEvents...)
		r.zero(t, store.FamAmyReconnects, n, store.ReconnectEOF, store.ReconnectError, store.ReconnectHTTP5xx,
			store.ReconnectHTTP429, store.ReconnectUnauthorized, store.ReconnectIdle)
		r.zero(t, store.FamAmyGivenUp, n, store.GivenUpTimeout, store.GivenUpNotFound)
		r.zero(t, store.FamAmyRefused, n, store.RefusedReasons...)
		r.zeroHist(store.FamAmyTurnDurBucket, n, amyturn.OutcomeCompleted, amyturn.OutcomeFailed)
		r.zeroHist(store.FamAmyTTFTBucket, n)
		r.zeroHist(store.FamAmyTurnCostBucket, n)
		r.gauge(NameAmyTurnsInFlight, float64(u.InFlight), n)
		up := 0.0
		if u.Up {
			up = 1
		}
		r.gauge(NameAmyStreamUp, up, n)
	}
	r.flush()
}
