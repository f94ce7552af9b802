package collector

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/amp-exporter/amp-exporter/store"
)

// Metric names. Dashboards, alert rules and users' queries depend on them:
// never rename one. The landing page and the dashboard generator use these
// constants rather than copies of the strings.
const (
	// Amp: thread files, the Amp server and stream-json.
	NameThreads           = "amp_threads"
	NameMessages          = "amp_messages_total"
	NamePrompts           = "amp_prompts_total"
	NameTokens            = "amp_tokens_total"
	NameCredits           = "amp_credits_total"
	NameCost              = "amp_cost_usd_total"
	NameUnpriced          = "amp_unpriced_tokens_total"
	NameAssistantMessages = "amp_assistant_messages_total"
	NameToolCalls         = "amp_tool_calls_total"
	NameContextUtil       = "amp_context_window_utilization_ratio"
	NameExchangeDuration  = "amp_exchange_duration_seconds"
	NameLastActivity      = "amp_thread_last_activity_timestamp_seconds"
	NameExecutions        = "amp_executions_total"
	NameExecutionDuration = "amp_execution_duration_seconds"
	NameExecutionTurns    = "amp_execution_turns"
	NamePermissionDenials = "amp_permission_denials_total"
	NameBilledCost        = "amp_billed_cost_usd_total"
	NameWithoutUsage      = "amp_messages_without_usage_total"

	// The Amp server source.
	NameServerUp              = "amp_server_up"
	NameServerLastSync        = "amp_server_last_sync_timestamp_seconds"
	NameServerRequests        = "amp_server_requests_total"
	NameServerResponseBytes   = "amp_server_response_bytes_total"
	NameServerThreadsSkipped  = "amp_server_threads_skipped_total"
	NameEntitlementLimit      = "amp_entitlement_limit_usd"
	NameEntitlementRemaining  = "amp_entitlement_remaining_usd"
	NameEntitlementUsed       = "amp_entitlement_used_ratio"
	NameEntitlementWindowEnds = "amp_entitlement_window_reset_timestamp_seconds"

	// Amy turn streams.
	NameAmyTurnsStarted     = "amy_turns_started_total"
	NameAmyTurnsFinished    = "amy_turns_finished_total"
	NameAmyTurnsInFlight    = "amy_turns_in_flight"
	NameAmyTurnDuration     = "amy_turn_duration_seconds"
	NameAmyTimeToFirstToken = "amy_time_to_first_token_seconds"
	NameAmyCost             = "amy_cost_usd_total"
	NameAmyTurnCost         = "amy_turn_cost_usd"
	NameAmyAgentRuns        = "amy_agent_runs_total"
	NameAmyAgentDuration    = "amy_agent_duration_seconds"
	NameAmyAgentCost        = "amy_agent_cost_usd_total"
	NameAmyValidations      = "amy_validations_total"
	NameAmyValidationGates  = "amy_validation_gates_total"
	NameAmyRouting          = "amy_routing_decisions_total"
	NameAmyFactCheckIssues  = "amy_fact_check_issues_total"
	NameAmyMemoryEntries    = "amy_memory_entries_total"
	NameAmyCostWarnings     = "amy_cost_warnings_total"
	NameAmyEvents           = "amy_events_total"
	NameAmyStreamUp         = "amy_stream_up"
	NameAmyReconnects       = "amy_stream_reconnects_total"
	NameAmyDuplicates       = "amy_stream_duplicate_events_total"
	NameAmyTurnsGivenUp     = "amy_turns_given_up_total"
	NameAmyBadEvents        = "amy_stream_bad_events_total"
	NameAmyRefusedEvents    = "amy_stream_refused_events_total"

	// The exporter itself.
	NameBuildInfo          = "amp_exporter_build_info"
	NameParseErrors        = "amp_exporter_parse_errors_total"
	NameFilesParsed        = "amp_exporter_files_parsed_total"
	NameParseDuration      = "amp_exporter_parse_duration_seconds"
	NameReloadSuccessful   = "amp_exporter_config_last_reload_successful"
	NameReloadSuccessTime  = "amp_exporter_config_last_reload_success_timestamp_seconds"
	NameLabelValuesFolded  = "amp_exporter_label_values_folded_total"
	NameWatcherFallbacks   = "amp_exporter_watcher_fallbacks_total"
	NameWatcherPolling     = "amp_exporter_watcher_polling"
	NameThreadDirsMissing  = "amp_exporter_thread_dirs_missing"
	NameStateErrors        = "amp_exporter_state_errors_total"
	NameStateBytesWritten  = "amp_exporter_state_bytes_written_total"
	NameStateCompactions   = "amp_exporter_state_compactions_total"
	NameStateSaveDuration  = "amp_exporter_state_save_duration_seconds"
	NameStateLoadErrors    = "amp_exporter_state_load_errors_total"
	NamePricingInfo        = "amp_exporter_pricing_info"
	NameSourceLastChange   = "amp_exporter_source_last_change_timestamp_seconds"
	NameRemoteWriteSamples = "amp_exporter_remote_write_samples_total"
	NameRemoteWriteLastOK  = "amp_exporter_remote_write_last_success_timestamp_seconds"
)

// Type is a metric type as the exposition format names it.
type Type string

// The metric types.
const (
	Counter   Type = "counter"
	Gauge     Type = "gauge"
	Histogram Type = "histogram"
)

// Metric is one row of the table of metrics: everything the exporter
// exposes, one row per family. Rows with a store family are rendered from
// the stores' snapshots by the table alone; the others are set by code
// (gauges of a snapshot, the exporter's own instruments).
type Metric struct {
	Name string
	Type Type
	// Scope is the label the collector fills in for the store it renders
	// (source, upstream), "" for none.
	Scope string
	// Labels are the other labels; for a store family, the values of its
	// series' first and second label (histograms: the first only, the
	// second being the bucket).
	Labels []string
	Help   string
	// Family is the store family the values come from ("" for none); for
	// a histogram its bucket family, with Sum its sum and Buckets the
	// upper bounds.
	Family  store.Family
	Sum     store.Family
	Buckets []float64
	// Source says where the values come from, for the documentation.
	Source string
}

// AllLabels are the metric's label names, the scope first.
func (m *Metric) AllLabels() []string {
	if m.Scope == "" {
		return m.Labels
	}
	return append([]string{m.Scope}, m.Labels...)
}

// The sources the documentation names.
const (
	fromThreads = "thread files, the Amp server"
	fromAmp     = "thread files, the Amp server, stream-json"
	fromStream  = "stream-json"
	fromServer  = "the Amp server"
	fromAmy     = "Amy turn streams"
	fromSelf    = "the exporter"
)

// Metrics is the table. Adding a counter to a source: a store family, one
// row here, the golden file (go test ./collector -update) and the generated
// docs/metrics.md (the same flag).
var Metrics = []Metric{
	{Name: NameThreads, Type: Gauge, Labels: []string{"agent_mode"}, Source: fromThreads,
		Help: "Amp threads currently present and readable (local thread files, and threads listed on the Amp server when that source is on), by agent mode."},
	{Name: NameMessages, Type: Counter, Scope: "source", Labels: []string{"role"}, Family: store.FamMessages, Source: fromAmp,
		Help: "Amp messages seen, by role (user, assistant)."},
	{Name: NamePrompts, Type: Counter, Scope: "source", Family: store.FamPrompts, Source: fromAmp,
		Help: "Amp user messages that are prompts (not tool-result carriers)."},
	{Name: NameTokens, Type: Counter, Scope: "source", Labels: []string{"model", "token_type"}, Family: store.FamTokens, Source: fromAmp,
		Help: "Amp tokens by model and type, as the files report them (for non-Anthropic providers cache_creation holds the uncached prompt)."},
	{Name: NameCredits, Type: Counter, Scope: "source", Labels: []string{"model"}, Family: store.FamCredits, Source: fromThreads,
		Help: "Amp credits charged, where the files carry them."},
	{Name: NameCost, Type: Counter, Scope: "source", Labels: []string{"model"}, Family: store.FamCost, Source: fromAmp,
		Help: "Estimated spend in US dollars: tokens times list prices (amp_exporter_pricing_info says which table), counted at the prices in effect when the tokens were seen. An estimate, not a bill."},
	{Name: NameUnpriced, Type: Counter, Scope: "source", Labels: []string{"model"}, Family: store.FamUnpriced, Source: fromAmp,
		Help: "Tokens of models the price table does not know; they are missing from amp_cost_usd_total."},
	{Name: NameAssistantMessages, Type: Counter, Scope: "source", Labels: []string{"model", "stop_reason"}, Family: store.FamFinished, Source: fromAmp,
		Help: "Finished Amp model turns by stop reason; cancelled and error turns under those names."},
	{Name: NameWithoutUsage, Type: Counter, Scope: "source", Family: store.FamNoUsage, Source: fromThreads,
		Help: "Finished Amp assistant messages that carry no usage block: their tokens and cost are unknown, so they are missing from amp_tokens_total and amp_cost_usd_total."},
	{Name: NameToolCalls, Type: Counter, Scope: "source", Labels: []string{"tool", "status"}, Family: store.FamToolCalls, Source: fromAmp,
		Help: "Amp tool results that reached a terminal status, by normalized tool name."},
	{Name: NameContextUtil, Type: Histogram, Labels: []string{"model"}, Family: store.FamContextBucket, Sum: store.FamContextSum, Buckets: store.ContextBuckets, Source: fromThreads,
		Help: "Share of the context window used by each finished assistant message (totalInputTokens / maxInputTokens)."},
	{Name: NameExchangeDuration, Type: Histogram, Scope: "source", Family: store.FamExchangeBucket, Sum: store.FamExchangeSum, Buckets: store.ExchangeBuckets, Source: fromThreads,
		Help: "Time from a prompt being sent to the last assistant message of its exchange."},
	{Name: NameLastActivity, Type: Gauge, Source: fromThreads,
		Help: "Newest activity seen in any Amp thread (prompt sent, inference finished, thread created)."},
	{Name: NameBilledCost, Type: Counter, Scope: "source", Labels: []string{"kind"}, Family: store.FamBilled, Source: fromServer,
		Help: "What Amp itself bills for the threads read from the Amp server (threadDisplayCostInfo), by kind: free, paid, subscription from its breakdown, total where it gives none. The real figure beside the amp_cost_usd_total estimate."},
	{Name: NameExecutions, Type: Counter, Labels: []string{"outcome"}, Family: store.FamExecutions, Source: fromStream,
		Help: "Amp stream-json runs finished, by outcome: success, error, or incomplete (the stream ended, or another run began, before a result line)."},
	{Name: NameExecutionDuration, Type: Histogram, Labels: []string{"outcome"}, Family: store.FamExecDurationBucket, Sum: store.FamExecDurationSum, Buckets: store.ExecutionDurationBuckets, Source: fromStream,
		Help: "duration_ms of stream-json result lines."},
	{Name: NameExecutionTurns, Type: Histogram, Family: store.FamExecTurnsBucket, Sum: store.FamExecTurnsSum, Buckets: store.ExecutionTurnsBuckets, Source: fromStream,
		Help: "num_turns of stream-json result lines."},
	{Name: NamePermissionDenials, Type: Counter, Labels: []string{"tool"}, Family: store.FamPermissionDenials, Source: fromStream,
		Help: "Tools denied permission in stream-json runs, by normalized tool name."},

	{Name: NameServerUp, Type: Gauge, Source: fromServer,
		Help: "1 when the last sync with the Amp server succeeded."},
	{Name: NameServerLastSync, Type: Gauge, Source: fromServer,
		Help: "End of the last complete sync with the Amp server."},
	{Name: NameServerRequests, Type: Counter, Labels: []string{"method", "code"}, Source: fromServer,
		Help: "Requests to the Amp server by API method and HTTP status code (error: no answer)."},
	{Name: NameServerResponseBytes, Type: Counter, Labels: []string{"encoding"}, Source: fromServer,
		Help: "Bytes received from the Amp server: on the wire by content encoding (gzip, zstd, identity), and decompressed (decoded)."},
	{Name: NameServerThreadsSkipped, Type: Counter, Labels: []string{"reason"}, Source: fromServer,
		Help: "Threads the Amp server lists that are not counted, by reason (other_user: another user's thread shared with the account), once per thread."},
	{Name: NameEntitlementLimit, Type: Gauge, Labels: []string{"window"}, Source: fromServer,
		Help: "The Amp user's entitlement in the current window, in US dollars."},
	{Name: NameEntitlementRemaining, Type: Gauge, Labels: []string{"window"}, Source: fromServer,
		Help: "What is left of the Amp user's entitlement in the current window, in US dollars."},
	{Name: NameEntitlementUsed, Type: Gauge, Labels: []string{"window"}, Source: fromServer,
		Help: "Share of the Amp user's entitlement used in the current window (0–1)."},
	{Name: NameEntitlementWindowEnds, Type: Gauge, Labels: []string{"window"}, Source: fromServer,
		Help: "When the Amp user's current entitlement window resets."},

	{Name: NameAmyTurnsStarted, Type: Counter, Scope: "upstream", Family: store.FamAmyStarted, Source: fromAmy,
		Help: "Amy turns started (turn.started)."},
	{Name: NameAmyTurnsFinished, Type: Counter, Scope: "upstream", Labels: []string{"outcome"}, Family: store.FamAmyFinished, Source: fromAmy,
		Help: "Amy turns finished, by outcome (turn.completed, turn.failed)."},
	{Name: NameAmyTurnsInFlight, Type: Gauge, Scope: "upstream", Source: fromAmy,
		Help: "Amy turns started and not yet finished or given up."},
	{Name: NameAmyTurnDuration, Type: Histogram, Scope: "upstream", Labels: []string{"outcome"}, Family: store.FamAmyTurnDurBucket, Sum: store.FamAmyTurnDurSum, Buckets: store.AmyTurnDurationBuckets, Source: fromAmy,
		Help: "Amy turn duration, turn.started to turn.completed/failed (the turn's own timestamps when both carry one, else the exporter's clock)."},
	{Name: NameAmyTimeToFirstToken, Type: Histogram, Scope: "upstream", Family: store.FamAmyTTFTBucket, Sum: store.FamAmyTTFTSum, Buckets: store.AmyTTFTBuckets, Source: fromAmy,
		Help: "Amy turn.started to the first synthesis_delta, on the exporter's clock."},
	{Name: NameAmyCost, Type: Counter, Scope: "upstream", Family: store.FamAmyCost, Source: fromAmy,
		Help: "Amy spend in US dollars from turn.completed result.cost_usd (as the API reports it)."},
	{Name: NameAmyTurnCost, Type: Histogram, Scope: "upstream", Family: store.FamAmyTurnCostBucket, Sum: store.FamAmyTurnCostSum, Buckets: store.AmyTurnCostBuckets, Source: fromAmy,
		Help: "Amy cost per completed turn in US dollars."},
	{Name: NameAmyAgentRuns, Type: Counter, Scope: "upstream", Labels: []string{"agent"}, Family: store.FamAmyAgentRuns, Source: fromAmy,
		Help: "Amy agent runs (agent_end), by agent."},
	{Name: NameAmyAgentDuration, Type: Histogram, Scope: "upstream", Labels: []string{"agent"}, Family: store.FamAmyAgentDurBucket, Sum: store.FamAmyAgentDurSum, Buckets: store.AmyAgentDurationBuckets, Source: fromAmy,
		Help: "Amy agent run durations (agent_end duration_ms)."},
	{Name: NameAmyAgentCost, Type: Counter, Scope: "upstream", Labels: []string{"agent"}, Family: store.FamAmyAgentCost, Source: fromAmy,
		Help: "Amy agent spend in US dollars (agent_end cost_usd)."},
	{Name: NameAmyValidations, Type: Counter, Scope: "upstream", Labels: []string{"verdict"}, Family: store.FamAmyValidations, Source: fromAmy,
		Help: "Amy validator verdicts (validation_end)."},
	{Name: NameAmyValidationGates, Type: Counter, Scope: "upstream", Labels: []string{"result"}, Family: store.FamAmyGates, Source: fromAmy,
		Help: "Amy validation gates passed and failed (gates_passed, gates_total - gates_passed)."},
	{Name: NameAmyRouting, Type: Counter, Scope: "upstream", Labels: []string{"main_agent"}, Family: store.FamAmyRouting, Source: fromAmy,
		Help: "Amy routing decisions by main agent."},
	{Name: NameAmyFactCheckIssues, Type: Counter, Scope: "upstream", Family: store.FamAmyFactIssues, Source: fromAmy,
		Help: "Issues reported by Amy fact checks."},
	{Name: NameAmyMemoryEntries, Type: Counter, Scope: "upstream", Family: store.FamAmyMemory, Source: fromAmy,
		Help: "Entries Amy remembered (memory events)."},
	{Name: NameAmyCostWarnings, Type: Counter, Scope: "upstream", Family: store.FamAmyCostWarnings, Source: fromAmy,
		Help: "Amy cost_warning events."},
	{Name: NameAmyEvents, Type: Counter, Scope: "upstream", Labels: []string{"event"}, Family: store.FamAmyEvents, Source: fromAmy,
		Help: "Amy events by name; names outside the catalogue as unknown."},
	{Name: NameAmyStreamUp, Type: Gauge, Scope: "upstream", Source: fromAmy,
		Help: "1 while the upstream's streams are connected or idle without error."},
	{Name: NameAmyReconnects, Type: Counter, Scope: "upstream", Labels: []string{"reason"}, Family: store.FamAmyReconnects, Source: fromAmy,
		Help: "Amy stream reconnections, by reason."},
	{Name: NameAmyDuplicates, Type: Counter, Scope: "upstream", Family: store.FamAmyDuplicates, Source: fromAmy,
		Help: "Replayed Amy events dropped because their id was already counted."},
	{Name: NameAmyTurnsGivenUp, Type: Counter, Scope: "upstream", Labels: []string{"reason"}, Family: store.FamAmyGivenUp, Source: fromAmy,
		Help: "Amy turns no longer followed before they ended: timeout (turn_timeout) or not_found (HTTP 404, past the replay window)."},
	{Name: NameAmyBadEvents, Type: Counter, Scope: "upstream", Family: store.FamAmyBadEvents, Source: fromAmy,
		Help: "Amy events whose data was not a JSON object (counted and skipped)."},
	{Name: NameAmyRefusedEvents, Type: Counter, Scope: "upstream", Labels: []string{"reason"}, Family: store.FamAmyRefused, Source: fromAmy,
		Help: "Amy events neither counted nor stored because they exceed a bound: event_id_too_long, turn_id_too_long, event_too_large, turn_budget (ids one turn may remember), state_budget (the byte budget of all turns)."},

	{Name: NameBuildInfo, Type: Gauge, Labels: []string{"version", "revision", "branch", "goversion", "goos", "goarch", "tags"}, Source: fromSelf,
		Help: "A metric with a constant '1' value labeled by version, revision, branch, goversion from which amp_exporter was built, and the goos and goarch for the build."},
	{Name: NameParseErrors, Type: Counter, Labels: []string{"source", "reason"}, Source: fromSelf,
		Help: "Inputs the exporter could not parse, by source and reason; the last good data of each is kept."},
	{Name: NameFilesParsed, Type: Counter, Source: fromSelf,
		Help: "Thread files parsed successfully (unchanged files are not re-read)."},
	{Name: NameParseDuration, Type: Histogram, Labels: []string{"source"}, Source: fromSelf,
		Help: "Time to read and parse one input."},
	{Name: NameReloadSuccessful, Type: Gauge, Source: fromSelf,
		Help: "Whether the last configuration load succeeded (1) or kept the previous configuration (0)."},
	{Name: NameReloadSuccessTime, Type: Gauge, Source: fromSelf,
		Help: "When the configuration was last loaded successfully."},
	{Name: NameLabelValuesFolded, Type: Counter, Labels: []string{"label"}, Source: fromSelf,
		Help: "Distinct data values folded into \"other\" because their label reached limits.max_label_values."},
	{Name: NameWatcherFallbacks, Type: Counter, Labels: []string{"reason"}, Source: fromSelf,
		Help: "Times the thread watcher fell back to polling a directory (inotify overflow, watcher error, failed watch)."},
	{Name: NameWatcherPolling, Type: Gauge, Labels: []string{"source"}, Source: fromSelf,
		Help: "1 while thread directories are polled instead of watched with inotify."},
	{Name: NameThreadDirsMissing, Type: Gauge, Source: fromSelf,
		Help: "Configured thread directories that do not exist right now."},
	{Name: NameStateErrors, Type: Counter, Labels: []string{"operation"}, Source: fromSelf,
		Help: "Failures to load or save the state under --storage.path."},
	{Name: NameStateLoadErrors, Type: Counter, Labels: []string{"kind"}, Source: fromSelf,
		Help: "What loading the state found, by kind: torn_tail (a save cut off by a crash, expected after one), batch and record (damage: what it hit is lost, the rest kept), undecodable, not_a_log, legacy_file."},
	{Name: NameStateBytesWritten, Type: Counter, Source: fromSelf,
		Help: "Bytes written to the state log by saves and compactions."},
	{Name: NameStateCompactions, Type: Counter, Source: fromSelf,
		Help: "Rewrites of the state log without its superseded records."},
	{Name: NameStateSaveDuration, Type: Histogram, Source: fromSelf,
		Help: "Time to save what changed to the state log, sync included."},
	{Name: NamePricingInfo, Type: Gauge, Labels: []string{"source", "version"}, Source: fromSelf,
		Help: "The price table in use (source and version); 1 for the current one."},
	{Name: NameSourceLastChange, Type: Gauge, Labels: []string{"source"}, Source: fromSelf,
		Help: "When the exporter last saw a source's data change."},
	{Name: NameRemoteWriteSamples, Type: Counter, Labels: []string{"url_hash", "result"}, Source: fromSelf,
		Help: "Samples pushed to a remote-write receiver, by result: sent (accepted), failed (refused with a 4xx, not retried), dropped (still failing when the push interval ran out; the next push carries the current values)."},
	{Name: NameRemoteWriteLastOK, Type: Gauge, Labels: []string{"url_hash"}, Source: fromSelf,
		Help: "When a push to the remote-write receiver last succeeded."},
}

// Derived from Metrics at initialization, never written after.
var (
	byName   = map[string]*Metric{}
	byFamily = map[store.Family]*Metric{} // by Family, and histograms by Sum too
	descs    = map[string]*prometheus.Desc{}
)

func init() {
	for i := range Metrics {
		m := &Metrics[i]
		if byName[m.Name] != nil {
			panic(fmt.Sprintf("collector: metric %s twice in the table", m.Name))
		}
		byName[m.Name] = m
		for _, f := range []store.Family{m.Family, m.Sum} {
			if f == "" {
				continue
			}
			if byFamily[f] != nil {
				panic(fmt.Sprintf("collector: store family %s rendered twice", f))
			}
			byFamily[f] = m
		}
		descs[m.Name] = prometheus.NewDesc(m.Name, m.Help, m.AllLabels(), nil)
	}
}

// helpOf is the table's HELP of a metric, for the instruments registered
// by code (ExporterMetrics, AmpServerMetrics).
func helpOf(name string) string {
	m := byName[name]
	if m == nil {
		panic("collector: no row for metric " + name)
	}
	return m.Help
}
