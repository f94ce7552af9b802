package collector

// family names a counter (or histogram part) that a store keeps. The names
// are persisted in state files: never rename one.
type family string

// owner is a bit set of the stores that keep a family.
type owner uint8

const (
	ownerThreads owner = 1 << iota // ThreadStore: thread files and the Amp server
	ownerStreams                   // StreamStore: stream-json
	ownerAmy                       // AmyStore: Amy turn streams
)

// The families. Adding one: declare it here and give it a row in
// families; the scales, the sets each store's Import accepts and the
// names the state decoder interns are all derived from that table.
const (
	// Amp: threads, server threads and stream-json.
	famMessages       family = "messages"        // l1 role
	famPrompts        family = "prompts"         //
	famTokens         family = "tokens"          // l1 model, l2 token type
	famCredits        family = "credits"         // l1 model
	famFinished       family = "finished"        // l1 model, l2 stop reason
	famToolCalls      family = "tool_calls"      // l1 tool, l2 status
	famContextBucket  family = "context_bucket"  // l1 model, l2 bucket index
	famContextSum     family = "context_sum"     // l1 model
	famExchangeBucket family = "exchange_bucket" // l2 bucket index
	famExchangeSum    family = "exchange_sum"    //
	famCost           family = "cost_usd"        // l1 model
	famUnpriced       family = "unpriced_tokens" // l1 model
	// famTokensLong is the part of famTokens past the long-context
	// threshold of their request (priced higher by some models); kept for
	// pricing, not exposed.
	famTokensLong family = "tokens_long" // l1 model, l2 token type
	// famBilled is what Amp bills for a thread (threadDisplayCostInfo),
	// per kind; l1 kind (server.go).
	famBilled family = "billed_usd"

	// stream-json only.
	famExecutions         family = "executions"           // l1 outcome
	famExecDurationBucket family = "exec_duration_bucket" // l1 outcome, l2 bucket index
	famExecDurationSum    family = "exec_duration_sum"    // l1 outcome
	famExecTurnsBucket    family = "exec_turns_bucket"    // l2 bucket index
	famExecTurnsSum       family = "exec_turns_sum"       //
	famPermissionDenials  family = "permission_denials"   // l1 tool

	// Amy (per upstream).
	famAmyStarted        family = "amy_started"
	famAmyFinished       family = "amy_finished"        // l1 outcome
	famAmyTurnDurBucket  family = "amy_turn_dur_bucket" // l1 outcome, l2 bucket
	famAmyTurnDurSum     family = "amy_turn_dur_sum"    // l1 outcome (ms)
	famAmyTTFTBucket     family = "amy_ttft_bucket"     // l2 bucket
	famAmyTTFTSum        family = "amy_ttft_sum"        // ms
	famAmyCost           family = "amy_cost"            // 1e-10 USD
	famAmyTurnCostBucket family = "amy_turn_cost_bucket"
	famAmyTurnCostSum    family = "amy_turn_cost_sum"
	famAmyAgentRuns      family = "amy_agent_runs"       // l1 agent
	famAmyAgentDurBucket family = "amy_agent_dur_bucket" // l1 agent, l2 bucket
	famAmyAgentDurSum    family = "amy_agent_dur_sum"    // l1 agent (ms)
	famAmyAgentCost      family = "amy_agent_cost"       // l1 agent (1e-10 USD)
	famAmyValidations    family = "amy_validations"      // l1 verdict
	famAmyGates          family = "amy_gates"            // l1 result
	famAmyRouting        family = "amy_routing"          // l1 main agent
	famAmyFactIssues     family = "amy_fact_issues"
	famAmyMemory         family = "amy_memory"
	famAmyCostWarnings   family = "amy_cost_warnings"
	famAmyEvents         family = "amy_events" // l1 event
	famAmyReconnects     family = "amy_reconnects"
	famAmyDuplicates     family = "amy_duplicates"
	famAmyGivenUp        family = "amy_given_up" // l1 reason
	famAmyBadEvents      family = "amy_bad_events"
	famAmyRefused        family = "amy_refused" // l1 reason
)

// Fixed-point scales. Values are kept as integers — fixed point for the
// families that are not counts — so that sums are exact and do not depend
// on the order files are read in: a restart that re-reads the same files
// gives bit-identical totals, and a counter never moves down by a rounding
// error (Prometheus would take that for a reset).
const (
	scaleCount  = 1
	scaleNano   = 1e9  // nano-credits; ratios × 1e9
	scaleMillis = 1e3  // durations in milliseconds
	scaleUSD    = 1e10 // 1e-10 USD: a price of $0.0001 per million tokens is one unit per token
)

// familySpec is one row of the families table.
type familySpec struct {
	name   family
	scale  float64
	owners owner
}

// families is the one table of the families every store keeps: the name
// as persisted, the fixed-point scale, and the stores that keep it.
var families = []familySpec{
	{famMessages, scaleCount, ownerThreads | ownerStreams},
	{famPrompts, scaleCount, ownerThreads | ownerStreams},
	{famTokens, scaleCount, ownerThreads | ownerStreams},
	{famCredits, scaleNano, ownerThreads},
	{famFinished, scaleCount, ownerThreads | ownerStreams},
	{famToolCalls, scaleCount, ownerThreads | ownerStreams},
	{famContextBucket, scaleCount, ownerThreads},
	{famContextSum, scaleNano, ownerThreads},
	{famExchangeBucket, scaleCount, ownerThreads},
	{famExchangeSum, scaleMillis, ownerThreads},
	{famCost, scaleUSD, ownerThreads | ownerStreams},
	{famUnpriced, scaleCount, ownerThreads | ownerStreams},
	{famTokensLong, scaleCount, ownerThreads},
	{famBilled, scaleUSD, ownerThreads},

	{famExecutions, scaleCount, ownerStreams},
	{famExecDurationBucket, scaleCount, ownerStreams},
	{famExecDurationSum, scaleMillis, ownerStreams},
	{famExecTurnsBucket, scaleCount, ownerStreams},
	{famExecTurnsSum, scaleCount, ownerStreams},
	{famPermissionDenials, scaleCount, ownerStreams},

	{famAmyStarted, scaleCount, ownerAmy},
	{famAmyFinished, scaleCount, ownerAmy},
	{famAmyTurnDurBucket, scaleCount, ownerAmy},
	{famAmyTurnDurSum, scaleMillis, ownerAmy},
	{famAmyTTFTBucket, scaleCount, ownerAmy},
	{famAmyTTFTSum, scaleMillis, ownerAmy},
	{famAmyCost, scaleUSD, ownerAmy},
	{famAmyTurnCostBucket, scaleCount, ownerAmy},
	{famAmyTurnCostSum, scaleUSD, ownerAmy},
	{famAmyAgentRuns, scaleCount, ownerAmy},
	{famAmyAgentDurBucket, scaleCount, ownerAmy},
	{famAmyAgentDurSum, scaleMillis, ownerAmy},
	{famAmyAgentCost, scaleUSD, ownerAmy},
	{famAmyValidations, scaleCount, ownerAmy},
	{famAmyGates, scaleCount, ownerAmy},
	{famAmyRouting, scaleCount, ownerAmy},
	{famAmyFactIssues, scaleCount, ownerAmy},
	{famAmyMemory, scaleCount, ownerAmy},
	{famAmyCostWarnings, scaleCount, ownerAmy},
	{famAmyEvents, scaleCount, ownerAmy},
	{famAmyReconnects, scaleCount, ownerAmy},
	{famAmyDuplicates, scaleCount, ownerAmy},
	{famAmyGivenUp, scaleCount, ownerAmy},
	{famAmyBadEvents, scaleCount, ownerAmy},
	{famAmyRefused, scaleCount, ownerAmy},
}

// Derived from families; never written after package initialization.
var (
	familyScale    = map[family]float64{}
	knownFamilies  = familiesOf(ownerThreads)
	streamFamilies = familiesOf(ownerStreams)
	amyFamilies    = familiesOf(ownerAmy)
	// familyNames interns the family names, so decoding does not allocate
	// one string per series for them (serieslist.go).
	familyNames = map[string]string{"": ""}
)

func init() {
	for _, f := range families {
		familyScale[f.name] = f.scale
		familyNames[string(f.name)] = string(f.name)
	}
}

// familiesOf is the set of the families that the stores in o keep.
func familiesOf(o owner) map[family]bool {
	m := map[family]bool{}
	for _, f := range families {
		if f.owners&o != 0 {
			m[f.name] = true
		}
	}
	return m
}
