package store

import "slices"

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
// families, with the metric it is exposed as; the scales, the sets each
// store's Import accepts, the names the state decoder interns and the
// collector's rendering (its HELP, labels and docs/metrics.md) are all
// derived from that table (CONTRIBUTING.md, "Adding a metric").
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
	// FamTokensFast and FamTokensPlaid are the parts of FamTokens that ran
	// at fast and plaid speed (billed at a multiple of the list price,
	// speed.go), and their Long families those parts' tokens past the
	// long-context threshold; kept for pricing, not exposed.
	FamTokensFast      Family = "tokens_fast"       // l1 model, l2 token type
	FamTokensFastLong  Family = "tokens_fast_long"  // l1 model, l2 token type
	FamTokensPlaid     Family = "tokens_plaid"      // l1 model, l2 token type
	FamTokensPlaidLong Family = "tokens_plaid_long" // l1 model, l2 token type
	// FamSpeedPremium is the part of FamCost that fast and plaid speeds
	// add to the list price; l1 model, l2 speed.
	FamSpeedPremium Family = "speed_premium_usd"
	// FamBilled is what Amp bills for a thread (threadDisplayCostInfo),
	// per kind; l1 kind (ampserver.go).
	FamBilled Family = "billed_usd"
	// FamNoUsage counts finished assistant messages without a usage block.
	FamNoUsage Family = "no_usage"
	// FamLines counts the lines edit tools changed; l1 kind (added,
	// removed), l2 tool.
	FamLines Family = "lines_changed"
	// FamLinesByModel counts the same lines by the model that made the
	// edit call; l1 kind, l2 model. Its sum is FamLines' sum.
	FamLinesByModel Family = "lines_changed_by_model"
	// FamLinesUncounted counts the edit calls whose lines FamLines leaves
	// out; l1 reason (thread.UncountedDiffBudget).
	FamLinesUncounted Family = "lines_uncounted"
	// FamShellCommands counts shell commands; l1 outcome.
	FamShellCommands Family = "shell_commands"
	// FamCommits and FamPullRequests count the new commits and the pull
	// requests shell commands made (parser/shellcmd); FamPushes their
	// pushes, l1 outcome (thread.PushOutcomes).
	FamCommits      Family = "commits"
	FamPullRequests Family = "pull_requests"
	FamPushes       Family = "pushes"
	// FamCommitsByModel and FamPullRequestsByModel count the same commits
	// and pull requests by the model that made the shell call; l1 model.
	// Their sums are FamCommits' and FamPullRequests'.
	FamCommitsByModel      Family = "commits_by_model"
	FamPullRequestsByModel Family = "pull_requests_by_model"

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
	// items: a thread's items give the family (ThreadStore.contribute),
	// so a snapshot that lost items may count less of it, and covers
	// compares it. (no_usage, which items give too, has never been
	// compared: TestItemFamiliesAreThoseItemsGive names it.)
	items bool
	// metric is how the family is exposed; nil for a family kept for
	// counting only, and for a histogram's sum (its buckets' row names it).
	metric *Metric
	// repo: the family's series carry the repository label (SeriesKey.Repo)
	// although it is not exposed (tokens_long, which prices tokens). An
	// exposed family carries it when its metric lists the label.
	repo bool
}

// Metric is how a store family is exposed on /metrics: the collector
// renders the family by it, and takes it as the family's row of its table
// of metrics (collector.Metrics), so that a family is declared once.
type Metric struct {
	Name string
	Help string
	// Scope is the label that names the store the series come from
	// ("source", "upstream"), "" for none.
	Scope string
	// Labels name the series' first and second label (SeriesKey L1, L2);
	// for a histogram the first only, the second being the bucket.
	// "repository", always last, is SeriesKey.Repo: only the families money
	// is summed from carry it (repository.go), never a histogram, so that
	// its series stay a bounded product.
	Labels []string
	// Sum and Buckets make the family a histogram's buckets (per bucket,
	// by index): Sum is the family of its sum, Buckets the upper bounds.
	Sum     Family
	Buckets []float64
	// From says where the values come from, for the documentation.
	From string
}

// Where the families' values come from, for the documentation
// (Metric.From; the collector's rows of metrics set by code use them too).
const (
	FromThreads = "thread files, the Amp server"
	FromAmp     = "thread files, the Amp server, stream-json"
	FromStream  = "stream-json"
	FromServer  = "the Amp server"
	FromAmy     = "Amy turn streams"
)

// families is the one table of the families every store keeps: the name
// as persisted, the fixed-point scale, the stores that keep it, and the
// metric it is exposed as.
var families = []familySpec{
	{name: FamMessages, scale: scaleCount, owners: ownerThreads | ownerStreams, items: true, metric: &Metric{Name: "amp_messages_total", Scope: "source", Labels: []string{"role"}, From: FromAmp,
		Help: "Amp messages seen, by role (user, assistant)."}},
	{name: FamPrompts, scale: scaleCount, owners: ownerThreads | ownerStreams, items: true, metric: &Metric{Name: "amp_prompts_total", Scope: "source", Labels: []string{"repository"}, From: FromAmp,
		Help: "Amp user messages that are prompts (not tool-result carriers)."}},
	{name: FamTokens, scale: scaleCount, owners: ownerThreads | ownerStreams, items: true, metric: &Metric{Name: "amp_tokens_total", Scope: "source", Labels: []string{"model", "token_type", "repository"}, From: FromAmp,
		Help: "Amp tokens by model and type, as the files report them (for non-Anthropic providers cache_creation holds the uncached prompt)."}},
	{name: FamCredits, scale: scaleNano, owners: ownerThreads, items: true, metric: &Metric{Name: "amp_credits_total", Scope: "source", Labels: []string{"model", "repository"}, From: FromThreads,
		Help: "Amp credits charged, where the files carry them."}},
	{name: FamFinished, scale: scaleCount, owners: ownerThreads | ownerStreams, items: true, metric: &Metric{Name: "amp_assistant_messages_total", Scope: "source", Labels: []string{"model", "stop_reason"}, From: FromAmp,
		Help: "Finished Amp model turns by stop reason; cancelled and error turns under those names."}},
	{name: FamToolCalls, scale: scaleCount, owners: ownerThreads | ownerStreams, items: true, metric: &Metric{Name: "amp_tool_calls_total", Scope: "source", Labels: []string{"tool", "status"}, From: FromAmp,
		Help: "Amp tool results that reached a terminal status, by normalized tool name."}},
	{name: FamContextBucket, scale: scaleCount, owners: ownerThreads, items: true, metric: &Metric{Name: "amp_context_window_utilization_ratio", Labels: []string{"model"}, Sum: FamContextSum, Buckets: ContextBuckets, From: FromThreads,
		Help: "Share of the context window used by each finished assistant message (totalInputTokens / maxInputTokens)."}},
	{name: FamContextSum, scale: scaleNano, owners: ownerThreads, items: true},
	{name: FamExchangeBucket, scale: scaleCount, owners: ownerThreads, items: true, metric: &Metric{Name: "amp_exchange_duration_seconds", Scope: "source", Sum: FamExchangeSum, Buckets: ExchangeBuckets, From: FromThreads,
		Help: "Time from a prompt being sent to the last assistant message of its exchange."}},
	{name: FamExchangeSum, scale: scaleMillis, owners: ownerThreads, items: true},
	{name: FamCost, scale: scaleUSD, owners: ownerThreads | ownerStreams, metric: &Metric{Name: "amp_cost_usd_total", Scope: "source", Labels: []string{"model", "repository"}, From: FromAmp,
		Help: "Estimated spend in US dollars: tokens times list prices (amp_exporter_pricing_info says which table), counted at the prices in effect when the tokens were seen. An estimate, not a bill."}},
	{name: FamUnpriced, scale: scaleCount, owners: ownerThreads | ownerStreams, metric: &Metric{Name: "amp_unpriced_tokens_total", Scope: "source", Labels: []string{"model", "repository"}, From: FromAmp,
		Help: "Tokens of models the price table does not know; they are missing from amp_cost_usd_total."}},
	{name: FamTokensLong, scale: scaleCount, owners: ownerThreads, items: true, repo: true},
	{name: FamTokensFast, scale: scaleCount, owners: ownerThreads, items: true, repo: true},
	{name: FamTokensFastLong, scale: scaleCount, owners: ownerThreads, items: true, repo: true},
	{name: FamTokensPlaid, scale: scaleCount, owners: ownerThreads, items: true, repo: true},
	{name: FamTokensPlaidLong, scale: scaleCount, owners: ownerThreads, items: true, repo: true},
	{name: FamSpeedPremium, scale: scaleUSD, owners: ownerThreads, metric: &Metric{Name: "amp_speed_premium_usd_total", Scope: "source", Labels: []string{"model", "speed", "repository"}, From: FromThreads,
		Help: "Estimated US dollars that fast and plaid speeds added to amp_cost_usd_total: what those messages cost (the model's list price times Amp's multiplier for the speed) less what their tokens cost at the list price. Part of amp_cost_usd_total, not added to it. An estimate, not a bill."}},
	{name: FamBilled, scale: scaleUSD, owners: ownerThreads, metric: &Metric{Name: "amp_billed_cost_usd_total", Scope: "source", Labels: []string{"kind", "repository"}, From: FromServer,
		Help: "What Amp itself bills for the threads read from the Amp server (threadDisplayCostInfo), by kind: free, paid, subscription from its breakdown, total where it gives none. The real figure beside the amp_cost_usd_total estimate."}},
	{name: FamNoUsage, scale: scaleCount, owners: ownerThreads, metric: &Metric{Name: "amp_messages_without_usage_total", Scope: "source", From: FromThreads,
		Help: "Finished Amp assistant messages that carry no usage block: their tokens and cost are unknown, so they are missing from amp_tokens_total and amp_cost_usd_total."}},
	{name: FamLines, scale: scaleCount, owners: ownerThreads, items: true, metric: &Metric{Name: "amp_lines_changed_total", Scope: "source", Labels: []string{"kind", "tool", "repository"}, From: FromThreads,
		Help: "Lines Amp's edit tools added and removed (kind), counted from each tool call's input as Amp's UI counts them: edit_file by a line diff of old_str and new_str, create_file by the lines of content, apply_patch by the lines of patchText; only calls whose run is done."}},
	{name: FamLinesByModel, scale: scaleCount, owners: ownerThreads, items: true, metric: &Metric{Name: "amp_lines_changed_by_model_total", Scope: "source", Labels: []string{"kind", "model"}, From: FromThreads,
		Help: "The lines of amp_lines_changed_total (same calls, same sum) by the model of the assistant message that made the edit call, for the cost per line by model; no tool or repository label, so that models are not multiplied by them."}},
	{name: FamLinesUncounted, scale: scaleCount, owners: ownerThreads, items: true, metric: &Metric{Name: "amp_lines_uncounted_edits_total", Scope: "source", Labels: []string{"reason"}, From: FromThreads,
		Help: "Edit tool calls whose run is done but whose lines amp_lines_changed_total leaves out, by reason: diff_budget (one parse of the thread had spent its budget of diff work, and this edit needed a costly diff)."}},
	{name: FamShellCommands, scale: scaleCount, owners: ownerThreads, items: true, metric: &Metric{Name: "amp_shell_commands_total", Scope: "source", Labels: []string{"outcome"}, From: FromThreads,
		Help: "Shell commands Amp ran (Bash, shell_command), by outcome: success (exit code 0), failure (another exit code, or the run failed), stopped (exit code -1 or none, or cancelled)."}},
	{name: FamCommits, scale: scaleCount, owners: ownerThreads | ownerStreams, items: true, metric: &Metric{Name: "amp_commits_total", Scope: "source", Labels: []string{"repository"}, From: FromAmp,
		Help: "New commits Amp's shell commands made: a git commit (not --amend, not --dry-run) of a call that exited 0 and printed git's header for a new commit. A count of commits, not of their worth."}},
	{name: FamPullRequests, scale: scaleCount, owners: ownerThreads | ownerStreams, items: true, metric: &Metric{Name: "amp_pull_requests_total", Scope: "source", Labels: []string{"repository"}, From: FromAmp,
		Help: "Pull and merge requests Amp's shell commands opened (gh pr create, glab mr create, hub pull-request) in a call that exited 0 and printed the request's URL; not one that already existed."}},
	{name: FamPushes, scale: scaleCount, owners: ownerThreads | ownerStreams, items: true, metric: &Metric{Name: "amp_pushes_total", Scope: "source", Labels: []string{"outcome", "repository"}, From: FromAmp,
		Help: "git push commands Amp's shell commands ran (not --dry-run), by outcome: success (the output shows the remote was reached and no ref failed), failure (a rejected push, or one that never reached the remote)."}},
	{name: FamCommitsByModel, scale: scaleCount, owners: ownerThreads | ownerStreams, items: true, metric: &Metric{Name: "amp_commits_by_model_total", Scope: "source", Labels: []string{"model"}, From: FromAmp,
		Help: "The commits of amp_commits_total (same calls, same sum) by the model of the assistant message that made the shell call, for the cost per commit by model; no repository label, so that models are not multiplied by repositories."}},
	{name: FamPullRequestsByModel, scale: scaleCount, owners: ownerThreads | ownerStreams, items: true, metric: &Metric{Name: "amp_pull_requests_by_model_total", Scope: "source", Labels: []string{"model"}, From: FromAmp,
		Help: "The pull requests of amp_pull_requests_total (same calls, same sum) by the model of the assistant message that made the shell call, for the cost per pull request by model; no repository label, so that models are not multiplied by repositories."}},

	{name: FamExecutions, scale: scaleCount, owners: ownerStreams, metric: &Metric{Name: "amp_executions_total", Labels: []string{"outcome"}, From: FromStream,
		Help: "Amp stream-json runs finished, by outcome: success, error, or incomplete (the stream ended, or another run began, before a result line)."}},
	{name: FamExecDurationBucket, scale: scaleCount, owners: ownerStreams, metric: &Metric{Name: "amp_execution_duration_seconds", Labels: []string{"outcome"}, Sum: FamExecDurationSum, Buckets: ExecutionDurationBuckets, From: FromStream,
		Help: "duration_ms of stream-json result lines."}},
	{name: FamExecDurationSum, scale: scaleMillis, owners: ownerStreams},
	{name: FamExecTurnsBucket, scale: scaleCount, owners: ownerStreams, metric: &Metric{Name: "amp_execution_turns", Sum: FamExecTurnsSum, Buckets: ExecutionTurnsBuckets, From: FromStream,
		Help: "num_turns of stream-json result lines."}},
	{name: FamExecTurnsSum, scale: scaleCount, owners: ownerStreams},
	{name: FamPermissionDenials, scale: scaleCount, owners: ownerStreams, metric: &Metric{Name: "amp_permission_denials_total", Labels: []string{"tool"}, From: FromStream,
		Help: "Tools denied permission in stream-json runs, by normalized tool name."}},

	{name: FamAmyStarted, scale: scaleCount, owners: ownerAmy, metric: &Metric{Name: "amy_turns_started_total", Scope: "upstream", From: FromAmy,
		Help: "Amy turns started (turn.started)."}},
	{name: FamAmyFinished, scale: scaleCount, owners: ownerAmy, metric: &Metric{Name: "amy_turns_finished_total", Scope: "upstream", Labels: []string{"outcome"}, From: FromAmy,
		Help: "Amy turns finished, by outcome (turn.completed, turn.failed)."}},
	{name: FamAmyTurnDurBucket, scale: scaleCount, owners: ownerAmy, metric: &Metric{Name: "amy_turn_duration_seconds", Scope: "upstream", Labels: []string{"outcome"}, Sum: FamAmyTurnDurSum, Buckets: AmyTurnDurationBuckets, From: FromAmy,
		Help: "Amy turn duration, turn.started to turn.completed/failed (the turn's own timestamps when both carry one, else the exporter's clock)."}},
	{name: FamAmyTurnDurSum, scale: scaleMillis, owners: ownerAmy},
	{name: FamAmyTTFTBucket, scale: scaleCount, owners: ownerAmy, metric: &Metric{Name: "amy_time_to_first_token_seconds", Scope: "upstream", Sum: FamAmyTTFTSum, Buckets: AmyTTFTBuckets, From: FromAmy,
		Help: "Amy turn.started to the first synthesis_delta, on the exporter's clock."}},
	{name: FamAmyTTFTSum, scale: scaleMillis, owners: ownerAmy},
	{name: FamAmyCost, scale: scaleUSD, owners: ownerAmy, metric: &Metric{Name: "amy_cost_usd_total", Scope: "upstream", From: FromAmy,
		Help: "Amy spend in US dollars from turn.completed result.cost_usd (as the API reports it)."}},
	{name: FamAmyTurnCostBucket, scale: scaleCount, owners: ownerAmy, metric: &Metric{Name: "amy_turn_cost_usd", Scope: "upstream", Sum: FamAmyTurnCostSum, Buckets: AmyTurnCostBuckets, From: FromAmy,
		Help: "Amy cost per completed turn in US dollars."}},
	{name: FamAmyTurnCostSum, scale: scaleUSD, owners: ownerAmy},
	{name: FamAmyAgentRuns, scale: scaleCount, owners: ownerAmy, metric: &Metric{Name: "amy_agent_runs_total", Scope: "upstream", Labels: []string{"agent"}, From: FromAmy,
		Help: "Amy agent runs (agent_end), by agent."}},
	{name: FamAmyAgentDurBucket, scale: scaleCount, owners: ownerAmy, metric: &Metric{Name: "amy_agent_duration_seconds", Scope: "upstream", Labels: []string{"agent"}, Sum: FamAmyAgentDurSum, Buckets: AmyAgentDurationBuckets, From: FromAmy,
		Help: "Amy agent run durations (agent_end duration_ms)."}},
	{name: FamAmyAgentDurSum, scale: scaleMillis, owners: ownerAmy},
	{name: FamAmyAgentCost, scale: scaleUSD, owners: ownerAmy, metric: &Metric{Name: "amy_agent_cost_usd_total", Scope: "upstream", Labels: []string{"agent"}, From: FromAmy,
		Help: "Amy agent spend in US dollars (agent_end cost_usd)."}},
	{name: FamAmyValidations, scale: scaleCount, owners: ownerAmy, metric: &Metric{Name: "amy_validations_total", Scope: "upstream", Labels: []string{"verdict"}, From: FromAmy,
		Help: "Amy validator verdicts (validation_end)."}},
	{name: FamAmyGates, scale: scaleCount, owners: ownerAmy, metric: &Metric{Name: "amy_validation_gates_total", Scope: "upstream", Labels: []string{"result"}, From: FromAmy,
		Help: "Amy validation gates passed and failed (gates_passed, gates_total - gates_passed)."}},
	{name: FamAmyRouting, scale: scaleCount, owners: ownerAmy, metric: &Metric{Name: "amy_routing_decisions_total", Scope: "upstream", Labels: []string{"main_agent"}, From: FromAmy,
		Help: "Amy routing decisions by main agent."}},
	{name: FamAmyFactIssues, scale: scaleCount, owners: ownerAmy, metric: &Metric{Name: "amy_fact_check_issues_total", Scope: "upstream", From: FromAmy,
		Help: "Issues reported by Amy fact checks."}},
	{name: FamAmyMemory, scale: scaleCount, owners: ownerAmy, metric: &Metric{Name: "amy_memory_entries_total", Scope: "upstream", From: FromAmy,
		Help: "Entries Amy remembered (memory events)."}},
	{name: FamAmyCostWarnings, scale: scaleCount, owners: ownerAmy, metric: &Metric{Name: "amy_cost_warnings_total", Scope: "upstream", From: FromAmy,
		Help: "Amy cost_warning events."}},
	{name: FamAmyEvents, scale: scaleCount, owners: ownerAmy, metric: &Metric{Name: "amy_events_total", Scope: "upstream", Labels: []string{"event"}, From: FromAmy,
		Help: "Amy events by name; names outside the catalogue as unknown."}},
	{name: FamAmyReconnects, scale: scaleCount, owners: ownerAmy, metric: &Metric{Name: "amy_stream_reconnects_total", Scope: "upstream", Labels: []string{"reason"}, From: FromAmy,
		Help: "Amy stream reconnections, by reason."}},
	{name: FamAmyDuplicates, scale: scaleCount, owners: ownerAmy, metric: &Metric{Name: "amy_stream_duplicate_events_total", Scope: "upstream", From: FromAmy,
		Help: "Replayed Amy events dropped because their id was already counted."}},
	{name: FamAmyGivenUp, scale: scaleCount, owners: ownerAmy, metric: &Metric{Name: "amy_turns_given_up_total", Scope: "upstream", Labels: []string{"reason"}, From: FromAmy,
		Help: "Amy turns no longer followed before they ended: timeout (turn_timeout) or not_found (HTTP 404, past the replay window)."}},
	{name: FamAmyBadEvents, scale: scaleCount, owners: ownerAmy, metric: &Metric{Name: "amy_stream_bad_events_total", Scope: "upstream", From: FromAmy,
		Help: "Amy events whose data was not a JSON object (counted and skipped)."}},
	{name: FamAmyRefused, scale: scaleCount, owners: ownerAmy, metric: &Metric{Name: "amy_stream_refused_events_total", Scope: "upstream", Labels: []string{"reason"}, From: FromAmy,
		Help: "Amy events neither counted nor stored because they exceed a bound: event_id_too_long, turn_id_too_long, event_too_large, turn_budget (ids one turn may remember), state_budget (the byte budget of all turns)."}},
}

// Derived from families; never written after package initialization.
var (
	familyScale    = map[Family]float64{}
	itemFamilies   = map[Family]bool{} // the families a thread's items give
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
		if f.items {
			itemFamilies[f.name] = true
		}
		if f.repo || f.metric != nil && slices.Contains(f.metric.Labels, RepositoryLabel) {
			repoFamily[f.name] = true
		}
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

// FamilyMetric is an exposed family and its metric.
type FamilyMetric struct {
	Family Family
	Metric Metric
}

// Exposed lists the exposed families with their metrics, in the table's
// order; a histogram once, under its buckets' family.
func Exposed() []FamilyMetric {
	var out []FamilyMetric
	for _, f := range families {
		if f.metric != nil {
			out = append(out, FamilyMetric{f.name, *f.metric})
		}
	}
	return out
}

// AmyFamily reports whether f is a family of the Amy store.
func AmyFamily(f Family) bool { return amyFamilies[f] }
