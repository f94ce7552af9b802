package store

// family names a counter (or histogram part) that a store keeps. The names
// are persisted in state files: never rename one.
type Family string

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
	FamMessages       Family = "messages"        // l1 role
	FamPrompts        Family = "prompts"         //
	FamTokens         Family = "tokens"          // l1 model, l2 token type
	FamCredits        Family = "credits"         // l1 model
	FamFinished       Family = "finished"        // l1 model, l2 stop reason
	FamToolCalls      Family = "tool_calls"      // l1 tool, l2 status
	FamContextBucket  Family = "context_bucket"  // l1 model, l2 bucket index
	FamContextSum     Family = "context_sum"     // l1 model
	FamExchangeBucket Family = "exchange_bucket" // l2 bucket index
	FamExchangeSum    Family = "exchange_sum"    //
	FamCost           Family = "cost_usd"        // l1 model
	FamUnpriced       Family = "unpriced_tokens" // l1 model
	// FamTokensLong is the part of FamTokens past the long-context
	// threshold of their request (priced higher by some models); kept for
	// pricing, not exposed.
	FamTokensLong Family = "tokens_long" // l1 model, l2 token type
	// FamBilled is what Amp bills for a thread (threadDisplayCostInfo),
	// per kind; l1 kind (ampserver.go).
	FamBilled Family = "billed_usd"
	// FamNoUsage counts finished assistant messages without a usage block.
	FamNoUsage Family = "no_usage"

	// stream-json only.
	FamExecutions         Family = "executions"           // l1 outcome
	FamExecDurationBucket Family = "exec_duration_bucket" // l1 outcome, l2 bucket index
	FamExecDurationSum    Family = "exec_duration_sum"    // l1 outcome
	FamExecTurnsBucket    Family = "exec_turns_bucket"    // l2 bucket index
	FamExecTurnsSum       Family = "exec_turns_sum"       //
	FamPermissionDenials  Family = "permission_denials"   // l1 tool

	// Amy (per upstream).
	FamAmyStarted        Family = "amy_started"
	FamAmyFinished       Family = "amy_finished"        // l1 outcome
	FamAmyTurnDurBucket  Family = "amy_turn_dur_bucket" // l1 outcome, l2 bucket
	FamAmyTurnDurSum     Family = "amy_turn_dur_sum"    // l1 outcome (ms)
	FamAmyTTFTBucket     Family = "amy_ttft_bucket"     // l2 bucket
	FamAmyTTFTSum        Family = "amy_ttft_sum"        // ms
	FamAmyCost           Family = "amy_cost"            // 1e-10 USD
	FamAmyTurnCostBucket Family = "amy_turn_cost_bucket"
	FamAmyTurnCostSum    Family = "amy_turn_cost_sum"
	FamAmyAgentRuns      Family = "amy_agent_runs"       // l1 agent
	FamAmyAgentDurBucket Family = "amy_agent_dur_bucket" // l1 agent, l2 bucket
	FamAmyAgentDurSum    Family = "amy_agent_dur_sum"    // l1 agent (ms)
	FamAmyAgentCost      Family = "amy_agent_cost"       // l1 agent (1e-10 USD)
	FamAmyValidations    Family = "amy_validations"      // l1 verdict
	FamAmyGates          Family = "amy_gates"            // l1 result
	FamAmyRouting        Family = "amy_routing"          // l1 main agent
	FamAmyFactIssues     Family = "amy_fact_issues"
	FamAmyMemory         Family = "amy_memory"
	FamAmyCostWarnings   Family = "amy_cost_warnings"
	FamAmyEvents         Family = "amy_events" // l1 event
	FamAmyReconnects     Family = "amy_reconnects"
	FamAmyDuplicates     Family = "amy_duplicates"
	FamAmyGivenUp        Family = "amy_given_up" // l1 reason
	FamAmyBadEvents      Family = "amy_bad_events"
	FamAmyRefused        Family = "amy_refused" // l1 reason
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
	name   Family
	scale  float64
	owners owner
}

// families is the one table of the families every store keeps: the name
// as persisted, the fixed-point scale, and the stores that keep it.
var families = []familySpec{
	{FamMessages, scaleCount, ownerThreads | ownerStreams},
	{FamPrompts, scaleCount, ownerThreads | ownerStreams},
	{FamTokens, scaleCount, ownerThreads | ownerStreams},
	{FamCredits, scaleNano, ownerThreads},
	{FamFinished, scaleCount, ownerThreads | ownerStreams},
	{FamToolCalls, scaleCount, ownerThreads | ownerStreams},
	{FamContextBucket, scaleCount, ownerThreads},
	{FamContextSum, scaleNano, ownerThreads},
	{FamExchangeBucket, scaleCount, ownerThreads},
	{FamExchangeSum, scaleMillis, ownerThreads},
	{FamCost, scaleUSD, ownerThreads | ownerStreams},
	{FamUnpriced, scaleCount, ownerThreads | ownerStreams},
	{FamTokensLong, scaleCount, ownerThreads},
	{FamBilled, scaleUSD, ownerThreads},
	{FamNoUsage, scaleCount, ownerThreads},

	{FamExecutions, scaleCount, ownerStreams},
	{FamExecDurationBucket, scaleCount, ownerStreams},
	{FamExecDurationSum, scaleMillis, ownerStreams},
	{FamExecTurnsBucket, scaleCount, ownerStreams},
	{FamExecTurnsSum, scaleCount, ownerStreams},
	{FamPermissionDenials, scaleCount, ownerStreams},

	{FamAmyStarted, scaleCount, ownerAmy},
	{FamAmyFinished, scaleCount, ownerAmy},
	{FamAmyTurnDurBucket, scaleCount, ownerAmy},
	{FamAmyTurnDurSum, scaleMillis, ownerAmy},
	{FamAmyTTFTBucket, scaleCount, ownerAmy},
	{FamAmyTTFTSum, scaleMillis, ownerAmy},
	{FamAmyCost, scaleUSD, ownerAmy},
	{FamAmyTurnCostBucket, scaleCount, ownerAmy},
	{FamAmyTurnCostSum, scaleUSD, ownerAmy},
	{FamAmyAgentRuns, scaleCount, ownerAmy},
	{FamAmyAgentDurBucket, scaleCount, ownerAmy},
	{FamAmyAgentDurSum, scaleMillis, ownerAmy},
	{FamAmyAgentCost, scaleUSD, ownerAmy},
	{FamAmyValidations, scaleCount, ownerAmy},
	{FamAmyGates, scaleCount, ownerAmy},
	{FamAmyRouting, scaleCount, ownerAmy},
	{FamAmyFactIssues, scaleCount, ownerAmy},
	{FamAmyMemory, scaleCount, ownerAmy},
	{FamAmyCostWarnings, scaleCount, ownerAmy},
	{FamAmyEvents, scaleCount, ownerAmy},
	{FamAmyReconnects, scaleCount, ownerAmy},
	{FamAmyDuplicates, scaleCount, ownerAmy},
	{FamAmyGivenUp, scaleCount, ownerAmy},
	{FamAmyBadEvents, scaleCount, ownerAmy},
	{FamAmyRefused, scaleCount, ownerAmy},
}

// Derived from families; never written after package initialization.
var (
	familyScale    = map[Family]float64{}
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
func familiesOf(o owner) map[Family]bool {
	m := map[Family]bool{}
	for _, f := range families {
		if f.owners&o != 0 {
			m[f.name] = true
		}
	}
	return m
}

// Families lists every family the stores keep, in the table's order.
func Families() []Family {
	out := make([]Family, len(families))
	for i, f := range families {
		out[i] = f.name
	}
	return out
}

// AmyFamily reports whether f is a family of the Amy store.
func AmyFamily(f Family) bool { return amyFamilies[f] }
