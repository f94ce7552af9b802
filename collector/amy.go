package collector

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/amp-exporter/amp-exporter/parser/amy"
	"github.com/amp-exporter/amp-exporter/store"
)

// AmyCollector exposes the amy_* families.
type AmyCollector struct {
	store *store.AmyStore
	d     map[string]*prometheus.Desc
}

// NewAmyCollector returns the collector.
func NewAmyCollector(s *store.AmyStore) *AmyCollector {
	up := []string{"upstream"}
	desc := func(name, help string, labels ...string) *prometheus.Desc {
		return prometheus.NewDesc(name, help, append(append([]string{}, up...), labels...), nil)
	}
	return &AmyCollector{store: s, d: map[string]*prometheus.Desc{
		"started":     desc("amy_turns_started_total", "Amy turns started (turn.started)."),
		"finished":    desc("amy_turns_finished_total", "Amy turns finished, by outcome (turn.completed, turn.failed).", "outcome"),
		"inflight":    desc("amy_turns_in_flight", "Amy turns started and not yet finished or given up."),
		"duration":    desc("amy_turn_duration_seconds", "Amy turn duration, turn.started to turn.completed/failed (the turn's own timestamps when both carry one, else the exporter's clock).", "outcome"),
		"ttft":        desc("amy_time_to_first_token_seconds", "Amy turn.started to the first synthesis_delta, on the exporter's clock."),
		"cost":        desc("amy_cost_usd_total", "Amy spend in US dollars from turn.completed result.cost_usd (as the API reports it)."),
		"turncost":    desc("amy_turn_cost_usd", "Amy cost per completed turn in US dollars."),
		"agentruns":   desc("amy_agent_runs_total", "Amy agent runs (agent_end), by agent.", "agent"),
		"agentdur":    desc("amy_agent_duration_seconds", "Amy agent run durations (agent_end duration_ms).", "agent"),
		"agentcost":   desc("amy_agent_cost_usd_total", "Amy agent spend in US dollars (agent_end cost_usd).", "agent"),
		"validations": desc("amy_validations_total", "Amy validator verdicts (validation_end).", "verdict"),
		"gates":       desc("amy_validation_gates_total", "Amy validation gates passed and failed (gates_passed, gates_total - gates_passed).", "result"),
		"routing":     desc("amy_routing_decisions_total", "Amy routing decisions by main agent.", "main_agent"),
		"facts":       desc("amy_fact_check_issues_total", "Issues reported by Amy fact checks."),
		"memory":      desc("amy_memory_entries_total", "Entries Amy remembered (memory events)."),
		"warnings":    desc("amy_cost_warnings_total", "Amy cost_warning events."),
		"events":      desc("amy_events_total", "Amy events by name; names outside the catalogue as unknown.", "event"),
		"up":          desc("amy_stream_up", "1 while the upstream's streams are connected or idle without error."),
		"reconnects":  desc("amy_stream_reconnects_total", "Amy stream reconnections, by reason.", "reason"),
		"duplicates":  desc("amy_stream_duplicate_events_total", "Replayed Amy events dropped because their id was already counted."),
		"givenup":     desc("amy_turns_given_up_total", "Amy turns no longer followed before they ended: timeout (turn_timeout) or not_found (HTTP 404, past the replay window).", "reason"),
		"bad":         desc("amy_stream_bad_events_total", "Amy events whose data was not a JSON object (counted and skipped)."),
		"refused":     desc("amy_stream_refused_events_total", "Amy events neither counted nor stored because they exceed a bound: event_id_too_long, turn_id_too_long, event_too_large, turn_budget (ids one turn may remember), state_budget (the byte budget of all turns).", "reason"),
	}}
}

// Describe implements prometheus.Collector.
func (c *AmyCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range c.d {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (c *AmyCollector) Collect(ch chan<- prometheus.Metric) {
	for _, u := range c.store.Snapshot() {
		t, n := u.Totals, u.Name
		get := func(f store.Family, l1 string) float64 {
			return store.Unfixed(f, t[store.SeriesKey{Fam: f, L1: l1, L2: ""}])
		}
		emit(ch, c.d["started"], prometheus.CounterValue, get(store.FamAmyStarted, ""), n)
		for _, o := range []string{amy.OutcomeCompleted, amy.OutcomeFailed} {
			emit(ch, c.d["finished"], prometheus.CounterValue, get(store.FamAmyFinished, o), n, o)
		}
		emit(ch, c.d["inflight"], prometheus.GaugeValue, float64(u.InFlight), n)
		emit(ch, c.d["cost"], prometheus.CounterValue, get(store.FamAmyCost, ""), n)
		for _, v := range []string{amy.VerdictValidated, amy.VerdictConditional, amy.VerdictRejected} {
			emit(ch, c.d["validations"], prometheus.CounterValue, get(store.FamAmyValidations, v), n, v)
		}
		for _, r := range []string{"passed", "failed"} {
			emit(ch, c.d["gates"], prometheus.CounterValue, get(store.FamAmyGates, r), n, r)
		}
		emit(ch, c.d["facts"], prometheus.CounterValue, get(store.FamAmyFactIssues, ""), n)
		emit(ch, c.d["memory"], prometheus.CounterValue, get(store.FamAmyMemory, ""), n)
		emit(ch, c.d["warnings"], prometheus.CounterValue, get(store.FamAmyCostWarnings, ""), n)
		for _, e := range append(append([]string{}, amy.Catalogue...), amy.EventUnknown) {
			emit(ch, c.d["events"], prometheus.CounterValue, get(store.FamAmyEvents, e), n, e)
		}
		up := 0.0
		if u.Up {
			up = 1
		}
		emit(ch, c.d["up"], prometheus.GaugeValue, up, n)
		for _, r := range []string{store.ReconnectEOF, store.ReconnectError, store.ReconnectHTTP5xx, store.ReconnectHTTP429, store.ReconnectUnauthorized, store.ReconnectIdle} {
			emit(ch, c.d["reconnects"], prometheus.CounterValue, get(store.FamAmyReconnects, r), n, r)
		}
		emit(ch, c.d["duplicates"], prometheus.CounterValue, get(store.FamAmyDuplicates, ""), n)
		for _, r := range []string{store.GivenUpTimeout, store.GivenUpNotFound} {
			emit(ch, c.d["givenup"], prometheus.CounterValue, get(store.FamAmyGivenUp, r), n, r)
		}
		emit(ch, c.d["bad"], prometheus.CounterValue, get(store.FamAmyBadEvents, ""), n)
		for _, r := range store.RefusedReasons {
			emit(ch, c.d["refused"], prometheus.CounterValue, get(store.FamAmyRefused, r), n, r)
		}

		durations := histograms{
			amy.OutcomeCompleted: make([]float64, len(store.AmyTurnDurationBuckets)+1),
			amy.OutcomeFailed:    make([]float64, len(store.AmyTurnDurationBuckets)+1),
		}
		ttft := histograms{"": make([]float64, len(store.AmyTTFTBuckets)+1)}
		turnCost := histograms{"": make([]float64, len(store.AmyTurnCostBuckets)+1)}
		agentDur := histograms{}
		for k, v := range t {
			switch k.Fam {
			case store.FamAmyTurnDurBucket:
				durations.add(k.L1, k.L2, len(store.AmyTurnDurationBuckets), v)
			case store.FamAmyTTFTBucket:
				ttft.add("", k.L2, len(store.AmyTTFTBuckets), v)
			case store.FamAmyTurnCostBucket:
				turnCost.add("", k.L2, len(store.AmyTurnCostBuckets), v)
			case store.FamAmyAgentDurBucket:
				agentDur.add(k.L1, k.L2, len(store.AmyAgentDurationBuckets), v)
			case store.FamAmyAgentRuns:
				emit(ch, c.d["agentruns"], prometheus.CounterValue, float64(v), n, k.L1)
			case store.FamAmyAgentCost:
				emit(ch, c.d["agentcost"], prometheus.CounterValue, store.Unfixed(k.Fam, v), n, k.L1)
			case store.FamAmyRouting:
				emit(ch, c.d["routing"], prometheus.CounterValue, float64(v), n, k.L1)
			}
		}
		for outcome, b := range durations {
			ch <- constHistogram(c.d["duration"], store.AmyTurnDurationBuckets, b, get(store.FamAmyTurnDurSum, outcome), n, outcome)
		}
		ch <- constHistogram(c.d["ttft"], store.AmyTTFTBuckets, ttft[""], get(store.FamAmyTTFTSum, ""), n)
		ch <- constHistogram(c.d["turncost"], store.AmyTurnCostBuckets, turnCost[""], get(store.FamAmyTurnCostSum, ""), n)
		for agent, b := range agentDur {
			ch <- constHistogram(c.d["agentdur"], store.AmyAgentDurationBuckets, b, get(store.FamAmyAgentDurSum, agent), n, agent)
		}
	}
}
