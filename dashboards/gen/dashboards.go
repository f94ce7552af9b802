package main

import (
	"github.com/grafana/grafana-foundation-sdk/go/cog"
	"github.com/grafana/grafana-foundation-sdk/go/common"
	"github.com/grafana/grafana-foundation-sdk/go/dashboard"
)

// Rates of events are shown per minute (unit cpm), spend per hour: agent
// runs, tool calls and turns are too rare for per-second figures to read.
const (
	perMinute = " * 60"
	perHour   = " * 3600"
)

const spendTodayHelp = `Estimated spend (amp_cost_usd_total: tokens times list prices, not a bill) since midnight in the dashboard's time zone. ` +
	`The panel's relative time "now/d" fixes its range to today; the query subtracts each series' value at the range's start (@ start()) from its value now, so it does not depend on the dashboard's time picker. ` +
	`Series that appeared today count whole; a counter that went down (a reset) counts from zero. ` +
	`Grafana applies relative-time overrides only while the dashboard's range is relative: with an absolute range picked, this shows the spend over that range.`

func overview() *dash {
	d := newDash(UIDOverview, "Amp — overview",
		"Spend, tokens, tools and run outcomes of Amp agents, from amp-exporter (thread files and stream-json runs).",
		commonFilter)

	d.row("Spend")
	d.add(d.sinceStartStat("Spend today", spendTodayHelp, "currencyUSD", NameCost, "now/d").Decimals(2))
	d.add(d.sinceStartStat("Spend this month",
		`Estimated spend since the first of the month (relative time "now/M"), computed like "Spend today". Needs Prometheus to retain the month: with a shorter retention the counters' older values are unknown and whole series count as this month's.`,
		"currencyUSD", NameCost, "now/M").Decimals(2))
	d.add(d.sinceStartStat("Credits today",
		`Amp credits charged since midnight (amp_credits_total; only where the thread files carry credits), computed like "Spend today".`,
		"short", NameCredits, "now/d"))
	d.add(d.sinceStartStat("Unpriced tokens today",
		`Tokens since midnight of models the price table does not know (amp_unpriced_tokens_total): they are missing from the spend figures. Anything above zero means the spend is understated; add the model under pricing.models.`,
		"short", NameUnpricedTokens, "now/d").
		Thresholds(thresholds("green", step(1, "orange"))))
	d.add(d.stacked("Spend per model",
		"Estimated spend rate per model in US dollars per hour, both sources (threads and stream-json) together; stacked, so the top is the total.",
		"currencyUSD",
		t(fleetRate("model", NameCost, "")+perHour, "{{model}}")).
		AxisLabel("USD per hour"))
	d.add(d.stacked("Fast and plaid premium per model",
		"US dollars per hour that fast and plaid modes added to the estimated spend (amp_speed_premium_usd_total): what those messages cost at the model's list price times Amp's multiplier for the speed, less what their tokens cost at the list price. Part of \"Spend per model\", not added to it; empty while no thread runs fast. An estimate, not a bill.",
		"currencyUSD",
		t(fleetRate("model, speed", NameSpeedPremium, "")+perHour, "{{model}} ({{speed}})")).
		AxisLabel("USD per hour"))
	d.add(d.stacked("Credits per model",
		"Amp credits charged per hour, by model (only where the thread files carry credits); stacked.",
		"short",
		t(fleetRate("model", NameCredits, "")+perHour, "{{model}}")).
		AxisLabel("credits per hour"))

	d.repositoriesRow() // repositories.go
	d.serverRow()       // server.go
	d.workspaceRow()    // workspace.go

	d.row("Tokens")
	d.add(d.stacked("Tokens by type",
		"Tokens per minute by type, as the files report them: input, output, cache_read, cache_creation. For OpenAI, Gemini and Fireworks models Amp puts the uncached prompt in cache_creation.",
		"cpm",
		t(fleetRate("token_type", NameTokens, "")+perMinute, "{{token_type}}")).
		AxisLabel("tokens per minute"))
	d.add(d.ratio("Cache hit ratio",
		"Share of prompt tokens read from the cache: cache_read / (input + cache_read + cache_creation), per model and over all models. Empty while no prompt tokens flow.",
		t(fleetRate("model", NameTokens, `,token_type="cache_read"`)+" / ("+fleetRate("model", NameTokens, `,token_type=~"input|cache_read|cache_creation"`)+" > 0)", "{{model}}"),
		t(fleetRate("", NameTokens, `,token_type="cache_read"`)+" / ("+fleetRate("", NameTokens, `,token_type=~"input|cache_read|cache_creation"`)+" > 0)", "all models")))
	d.add(d.timeseries("Unpriced tokens by model",
		"Tokens per minute of models the price table does not know (amp_unpriced_tokens_total), by model and source. These are missing from the spend panels: add the model under pricing.models or a price file.",
		"cpm",
		t(fleetRate("model, source", NameUnpricedTokens, "")+perMinute, "{{model}} ({{source}})")).
		AxisLabel("tokens per minute"))
	d.add(d.timeseries("Context-window utilization by model",
		"p50, p90 and p99 of the share of the context window each finished assistant message used (totalInputTokens / maxInputTokens), by model, from the histogram amp_context_window_utilization_ratio.",
		"percentunit",
		percentiles(NameContextWindowUtilization, "model", "")...).
		Min(0))

	d.row("Tools and exchanges")
	d.add(d.stacked("Tool results by status",
		"Tool results per minute that reached a terminal status: done, error, cancelled, rejected (by the user); stacked.",
		"cpm",
		t(fleetRate("status", NameToolCalls, "")+perMinute, "{{status}}")))
	d.add(d.ratio("Tool failure ratio by tool",
		"Share of each tool's results with status error (cancelled and rejected are the user's choice, not failures). Tools without results in the window are not drawn.",
		t("("+fleetRate("tool", NameToolCalls, `,status="error"`)+" or 0 * "+fleetRate("tool", NameToolCalls, "")+") / ("+fleetRate("tool", NameToolCalls, "")+" > 0)", "{{tool}}")))
	d.add(d.timeseries("Exchange duration",
		"p50, p90 and p99 of the time from a prompt being sent to the last assistant message of its exchange (amp_exchange_duration_seconds), by source.",
		"s",
		percentiles(NameExchangeDuration, "source", "")...))
	d.add(d.stacked("Assistant messages by stop reason",
		"Finished model turns per minute by stop reason (end_turn, tool_use, …; cancelled and error under those names); stacked.",
		"cpm",
		t(fleetRate("stop_reason", NameAssistantMessages, "")+perMinute, "{{stop_reason}}")))
	d.add(d.stacked("Threads present by agent mode",
		"Amp threads currently present and readable (amp_threads: local thread files and, with the server source, threads on the Amp server), by agent mode; stacked. Deleting a thread lowers this, never the counters.",
		"short",
		t(`sum by (agent_mode) (amp_threads{$F})`, "{{agent_mode}}")))
	d.add(d.timeseries("Prompts",
		"User messages per minute that are prompts (not tool-result carriers), by source.",
		"cpm",
		t(fleetRate("source", NamePrompts, "")+perMinute, "{{source}}")))

	d.row("Stream-json runs")
	d.add(d.stacked("Runs by outcome",
		"amp --stream-json runs finished per minute by outcome: success, error, incomplete (the capture or upload ended before the result line); stacked.",
		"cpm",
		t(`sum by (outcome) (rate(amp_executions_total{$F}[$__rate_interval]))`+perMinute, "{{outcome}}")))
	d.add(d.timeseries("Run duration",
		"p50, p90 and p99 of stream-json runs' duration_ms (amp_execution_duration_seconds), by outcome.",
		"s",
		percentiles(NameExecutionDuration, "outcome", "")...))
	d.add(d.timeseries("Turns per run",
		"p50, p90 and p99 of stream-json runs' num_turns (amp_execution_turns).",
		"short",
		percentiles(NameExecutionTurns, "", "")...))
	d.add(d.stacked("Permission denials by tool",
		"Tools denied permission per minute in stream-json runs, by normalized tool name; stacked.",
		"cpm",
		t(`sum by (tool) (rate(amp_permission_denials_total{$F}[$__rate_interval]))`+perMinute, "{{tool}}")))
	return d
}

func amy() *dash {
	d := newDash(UIDAmy, "Amy — turns, agents and validation",
		"Amy turn event streams as amp-exporter counts them: turns, latency, agents, validation, spend and the health of the streams.",
		amyFilter)
	d.b.WithVariable(dashboard.NewQueryVariableBuilder("upstream").
		Label("upstream").
		Description("Configured Amy endpoints (amy[].name).").
		Datasource(dsRef()).
		Query(dashboard.StringOrMap{String: cog.ToPtr(`label_values(amy_turns_started_total{job=~"$job", instance=~"$instance"}, upstream)`)}).
		Definition(`label_values(amy_turns_started_total{job=~"$job", instance=~"$instance"}, upstream)`).
		Refresh(dashboard.VariableRefreshOnTimeRangeChanged).
		Sort(dashboard.VariableSortAlphabeticalAsc).
		Multi(true).
		IncludeAll(true).
		AllValue(".*").
		Current(allOption()))

	d.row("Turns")
	d.add(d.stat("Turns in flight",
		"Amy turns started and not yet finished or given up, over the selected upstreams.",
		"short",
		t(`sum(amy_turns_in_flight{$F})`, "in flight")))
	d.add(d.sinceStartStat("Amy spend today",
		`Amy spend since midnight in the dashboard's time zone (amy_cost_usd_total, from turn.completed result.cost_usd). The panel's relative time "now/d" fixes its range to today; the query subtracts each series' value at the range's start (@ start()) from its value now, independent of the time picker. A counter that went down counts from zero. With an absolute dashboard range, Grafana skips the override and this shows the spend over that range.`,
		"currencyUSD", NameAmyCost, "now/d").Decimals(2))
	d.add(d.sinceStartStat("Amy spend this month",
		`Amy spend since the first of the month (relative time "now/M"), computed like "Amy spend today"; needs Prometheus to retain the month.`,
		"currencyUSD", NameAmyCost, "now/M").Decimals(2))
	d.add(d.stat("Streams up",
		"Per upstream: up while its streams are connected or idle without error (amy_stream_up, the lowest over the selected instances).",
		"none",
		t(`min by (upstream) (amy_stream_up{$F})`, "{{upstream}}")).
		Mappings(valueText("0", "down", "red", "1", "up", "green")).
		Thresholds(thresholds("red", step(1, "green"))))
	d.add(d.timeseries("Turns started and finished",
		"Amy turns started per minute, and finished per minute by outcome (completed, failed), per upstream.",
		"cpm",
		t(`sum by (upstream) (rate(amy_turns_started_total{$F}[$__rate_interval]))`+perMinute, "started {{upstream}}"),
		t(`sum by (upstream, outcome) (rate(amy_turns_finished_total{$F}[$__rate_interval]))`+perMinute, "{{outcome}} {{upstream}}")))
	d.add(d.timeseries("Turns in flight by upstream",
		"Amy turns started and not yet finished or given up (amy_turns_in_flight), per upstream.",
		"short",
		t(`sum by (upstream) (amy_turns_in_flight{$F})`, "{{upstream}}")))
	d.add(d.timeseries("Turn duration",
		"p50, p90 and p99 of Amy turn durations, turn.started to turn.completed or turn.failed (amy_turn_duration_seconds), by outcome.",
		"s",
		percentiles(NameAmyTurnDuration, "outcome", "")...))
	d.add(d.timeseries("Time to first token",
		"p50, p90 and p99 of the time from turn.started to the first synthesis_delta (amy_time_to_first_token_seconds), per upstream.",
		"s",
		percentiles(NameAmyTimeToFirstToken, "upstream", "")...))

	d.row("Agents")
	d.add(d.stacked("Agent runs by agent",
		"Amy agent runs finished per minute (agent_end), by agent; stacked.",
		"cpm",
		t(`sum by (agent) (rate(amy_agent_runs_total{$F}[$__rate_interval]))`+perMinute, "{{agent}}")).
		Span(8))
	d.add(d.timeseries("Agent run duration by agent",
		"p50 and p90 of Amy agent run durations (agent_end duration_ms, amy_agent_duration_seconds), by agent.",
		"s",
		t(`histogram_quantile(0.5, sum by (le, agent) (rate(amy_agent_duration_seconds_bucket{$F}[$__rate_interval])))`, "p50 {{agent}}"),
		t(`histogram_quantile(0.9, sum by (le, agent) (rate(amy_agent_duration_seconds_bucket{$F}[$__rate_interval])))`, "p90 {{agent}}")).
		Span(8))
	d.add(d.stacked("Agent time by agent",
		"Seconds of agent run time per second of wall time, by agent: the average number of that agent's runs in progress. Stacked, so the top is Amy's total agent concurrency.",
		"short",
		t(`sum by (agent) (rate(amy_agent_duration_seconds_sum{$F}[$__rate_interval]))`, "{{agent}}")).
		AxisLabel("runs in progress (average)").
		Span(8))
	d.add(d.stacked("Agent spend by agent",
		"Amy agent spend in US dollars per hour (agent_end cost_usd, amy_agent_cost_usd_total), by agent; stacked.",
		"currencyUSD",
		t(`sum by (agent) (rate(amy_agent_cost_usd_total{$F}[$__rate_interval]))`+perHour, "{{agent}}")).
		AxisLabel("USD per hour"))
	d.add(d.stacked("Routing decisions by main agent",
		"Amy routing decisions per minute, by the main agent chosen; stacked.",
		"cpm",
		t(`sum by (main_agent) (rate(amy_routing_decisions_total{$F}[$__rate_interval]))`+perMinute, "{{main_agent}}")))

	d.row("Validation")
	d.add(d.stacked("Validator verdicts",
		"Amy validator verdicts per minute (validation_end): validated, conditional, rejected; stacked.",
		"cpm",
		t(`sum by (verdict) (rate(amy_validations_total{$F}[$__rate_interval]))`+perMinute, "{{verdict}}")).
		Span(6))
	d.add(d.ratio("Validation gate pass ratio",
		"Share of validation gates passed (gates_passed / gates_total over all validations in the window), per upstream.",
		t(`sum by (upstream) (rate(amy_validation_gates_total{$F,result="passed"}[$__rate_interval])) / (sum by (upstream) (rate(amy_validation_gates_total{$F}[$__rate_interval])) > 0)`, "{{upstream}}")).
		Span(6))
	d.add(d.timeseries("Fact-check issues",
		"Issues reported by Amy fact checks per minute (the length of fact_check.issues), per upstream.",
		"cpm",
		t(`sum by (upstream) (rate(amy_fact_check_issues_total{$F}[$__rate_interval]))`+perMinute, "{{upstream}}")).
		Span(6))
	d.add(d.timeseries("Cost warnings",
		"Amy cost_warning events per minute, per upstream.",
		"cpm",
		t(`sum by (upstream) (rate(amy_cost_warnings_total{$F}[$__rate_interval]))`+perMinute, "{{upstream}}")).
		Span(6))

	d.row("Spend")
	d.add(d.stacked("Amy spend",
		"Amy spend in US dollars per hour (turn.completed result.cost_usd, amy_cost_usd_total), per upstream; stacked.",
		"currencyUSD",
		t(`sum by (upstream) (rate(amy_cost_usd_total{$F}[$__rate_interval]))`+perHour, "{{upstream}}")).
		AxisLabel("USD per hour"))
	d.add(d.timeseries("Cost per turn",
		"Mean, p50 and p90 of the cost of a completed Amy turn in US dollars (amy_turn_cost_usd), per upstream.",
		"currencyUSD",
		t(`sum by (upstream) (rate(amy_turn_cost_usd_sum{$F}[$__rate_interval])) / (sum by (upstream) (rate(amy_turn_cost_usd_count{$F}[$__rate_interval])) > 0)`, "mean {{upstream}}"),
		t(`histogram_quantile(0.5, sum by (le, upstream) (rate(amy_turn_cost_usd_bucket{$F}[$__rate_interval])))`, "p50 {{upstream}}"),
		t(`histogram_quantile(0.9, sum by (le, upstream) (rate(amy_turn_cost_usd_bucket{$F}[$__rate_interval])))`, "p90 {{upstream}}")))

	d.row("Stream health")
	d.add(d.timeseries("Stream up",
		"1 while an upstream's streams are connected or idle without error (amy_stream_up; the lowest over the selected instances).",
		"bool_on_off",
		t(`min by (upstream) (amy_stream_up{$F})`, "{{upstream}}")).
		Min(0).Max(1))
	d.add(d.stacked("Reconnects by reason",
		"Amy stream reconnections per minute by reason: eof, error, http_5xx, http_429, unauthorized, idle_timeout; stacked.",
		"cpm",
		t(`sum by (reason) (rate(amy_stream_reconnects_total{$F}[$__rate_interval]))`+perMinute, "{{reason}}")))
	d.add(d.timeseries("Duplicate and undecodable events",
		"Replayed events dropped because their id was already counted (amy_stream_duplicate_events_total; normal after a reconnect), and events whose data was not a JSON object (amy_stream_bad_events_total), per minute.",
		"cpm",
		t(`sum by (upstream) (rate(amy_stream_duplicate_events_total{$F}[$__rate_interval]))`+perMinute, "duplicates {{upstream}}"),
		t(`sum by (upstream) (rate(amy_stream_bad_events_total{$F}[$__rate_interval]))`+perMinute, "undecodable {{upstream}}")))
	d.add(d.stacked("Turns given up by reason",
		"Amy turns no longer followed before they ended, per minute: timeout (turn_timeout) or not_found (HTTP 404, past the replay window); stacked.",
		"cpm",
		t(`sum by (reason) (rate(amy_turns_given_up_total{$F}[$__rate_interval]))`+perMinute, "{{reason}}")))
	d.add(d.stacked("Events by name",
		"Amy events per minute by name; names outside the catalogue as unknown. Replays are not counted; stacked.",
		"cpm",
		t(`sum by (event) (rate(amy_events_total{$F}[$__rate_interval]))`+perMinute, "{{event}}")).
		Span(24))
	return d
}

func health() *dash {
	d := newDash(UIDHealth, "amp-exporter — health",
		"Is amp-exporter itself well: scrapes, parsing, configuration, the thread watcher, its state, label folding, price table, build and process.",
		commonFilter)

	d.row("Status")
	d.add(d.stat("Targets up",
		"Prometheus' up for each selected amp-exporter instance: whether the last scrape succeeded.",
		"none",
		t(`up{$F}`, "{{instance}}")).
		Mappings(valueText("0", "down", "red", "1", "up", "green")).
		Thresholds(thresholds("red", step(1, "green"))))
	d.add(d.stat("Configuration",
		"Whether the last configuration (re)load succeeded (amp_exporter_config_last_reload_successful). On failure the previous configuration stays in effect; the log and POST /-/reload say why.",
		"none",
		t(`amp_exporter_config_last_reload_successful{$F}`, "{{instance}}")).
		Mappings(valueText("0", "reload failed", "red", "1", "loaded", "green")).
		Thresholds(thresholds("red", step(1, "green"))))
	d.add(d.stat("Last successful configuration load",
		"When each instance last loaded its configuration successfully (amp_exporter_config_last_reload_success_timestamp_seconds).",
		"dateTimeFromNow",
		t(`amp_exporter_config_last_reload_success_timestamp_seconds{$F} * 1000`, "{{instance}}")))
	d.add(d.stat("Thread watcher",
		"Whether each instance watches its thread directories with inotify or has fallen back to polling them (amp_exporter_watcher_polling).",
		"none",
		t(`max by (instance) (amp_exporter_watcher_polling{$F})`, "{{instance}}")).
		Mappings(valueText("0", "inotify", "green", "1", "polling", "orange")).
		Thresholds(thresholds("green", step(1, "orange"))))

	d.row("Parsing")
	d.add(d.stacked("Parse errors by source and reason",
		"Inputs that could not be parsed, per minute, by source (threads, stream) and reason (not_thread, truncated, invalid_json, too_large, read_error, …). Each keeps its last good data; stacked.",
		"cpm",
		t(`sum by (source, reason) (rate(amp_exporter_parse_errors_total{$F}[$__rate_interval]))`+perMinute, "{{source}} {{reason}}")).
		Span(8))
	d.add(d.timeseries("Files parsed",
		"Thread files parsed successfully per minute, per instance (unchanged files are not re-read).",
		"cpm",
		t(`sum by (instance) (rate(amp_exporter_files_parsed_total{$F}[$__rate_interval]))`+perMinute, "{{instance}}")).
		Span(8))
	d.add(d.timeseries("Parse duration",
		"p50, p90 and p99 of the time to read and parse one input (amp_exporter_parse_duration_seconds), by source.",
		"s",
		percentiles(NameParseDuration, "source", "")...).
		Span(8))

	d.row("Watcher, state and labels")
	d.add(d.stacked("Watcher fallbacks by reason",
		"Times per minute the thread watcher fell back from inotify to polling, by reason: overflow, watch_error, add_failed; stacked.",
		"cpm",
		t(`sum by (reason) (rate(amp_exporter_watcher_fallbacks_total{$F}[$__rate_interval]))`+perMinute, "{{reason}}")).
		Span(8))
	d.add(d.timeseries("Polling and missing directories",
		"1 while an instance polls its thread directories instead of watching them (amp_exporter_watcher_polling), and how many configured thread directories do not exist (amp_exporter_thread_dirs_missing).",
		"short",
		t(`max by (instance, source) (amp_exporter_watcher_polling{$F})`, "polling {{source}} {{instance}}"),
		t(`max by (instance) (amp_exporter_thread_dirs_missing{$F})`, "missing directories {{instance}}")).
		Min(0).
		Span(8))
	d.add(d.stacked("State errors by operation",
		"Failures per minute to load or save the counting state under --storage.path, by operation; stacked. A failed load starts counting over.",
		"cpm",
		t(`sum by (operation) (rate(amp_exporter_state_errors_total{$F}[$__rate_interval]))`+perMinute, "{{operation}}")).
		Span(8))
	d.add(d.timeseries("Folded label values by label",
		`Distinct data values folded into "other" because their label (model, tool, stop_reason, agent_mode, agent) reached limits.max_label_values, counted since the exporter's state began. Rising: raise the limit or expect "other" in the other dashboards.`,
		"short",
		t(`sum by (label) (amp_exporter_label_values_folded_total{$F})`, "{{label}}")))
	d.add(d.stat("Source last change",
		"When the exporter last saw each source's data change (amp_exporter_source_last_change_timestamp_seconds), and the newest activity in any Amp thread (amp_thread_last_activity_timestamp_seconds).",
		"dateTimeFromNow",
		t(`max by (source) (amp_exporter_source_last_change_timestamp_seconds{$F}) * 1000`, "{{source}}"),
		t(`max(amp_thread_last_activity_timestamp_seconds{$F}) * 1000`, "newest thread activity")).
		Span(12).
		Height(8).
		Orientation(common.VizOrientationHorizontal))

	d.row("Remote write")
	d.add(d.stacked("Remote-write samples by result",
		"Samples per minute pushed to remote-write receivers (amp_exporter_remote_write_samples_total), by host and result: sent (accepted), failed (refused with a 4xx, not retried), dropped (still failing when the push interval ran out; the next push carries the current values, so nothing is lost); stacked. Empty where no remote_write is configured.",
		"cpm",
		t(`sum by (host, instance, result) (rate(amp_exporter_remote_write_samples_total{$F}[$__rate_interval]))`+perMinute, "{{host}}{{instance}} {{result}}")).
		Span(12))
	d.add(d.timeseries("Time since the last successful push",
		"Seconds since each exporter's last accepted remote-write push, per receiver (url_hash) (time() - amp_exporter_remote_write_last_success_timestamp_seconds). On the receiver, a laptop that stopped pushing drops out of this panel after 5 minutes; the AmpExporterStoppedReporting alert watches for it.",
		"s",
		t(`time() - max by (user, host, instance, url_hash) (amp_exporter_remote_write_last_success_timestamp_seconds{$F})`, "{{user}} {{host}}{{instance}} {{url_hash}}")).
		Min(0).
		Span(12))

	d.row("Build and price table")
	d.add(d.table("Build info",
		"Version, revision and Go version of each selected instance (amp_exporter_build_info).",
		nil,
		t(`amp_exporter_build_info{$F}`, "")))
	d.add(d.table("Price table in use",
		"The price table each instance prices tokens with (amp_exporter_pricing_info): the embedded genai-prices table and its version, or a LiteLLM file and its sha256.",
		nil,
		t(`amp_exporter_pricing_info{$F}`, "")))

	d.row("Process")
	d.add(d.timeseries("Scrape duration",
		"How long Prometheus took to scrape each instance (scrape_duration_seconds). Scrapes read a snapshot and never wait on parsing: this should stay in milliseconds.",
		"s",
		t(`scrape_duration_seconds{$F}`, "{{instance}}")).
		Span(8))
	d.add(d.timeseries("Memory",
		"Resident memory of each instance (process_resident_memory_bytes) and the Go heap in use (go_memstats_heap_inuse_bytes).",
		"bytes",
		t(`process_resident_memory_bytes{$F}`, "resident {{instance}}"),
		t(`go_memstats_heap_inuse_bytes{$F}`, "Go heap {{instance}}")).
		Span(8))
	d.add(d.timeseries("CPU",
		"CPU time used per second of wall time (rate of process_cpu_seconds_total): 100% is one core.",
		"percentunit",
		t(`rate(process_cpu_seconds_total{$F}[$__rate_interval])`, "{{instance}}")).
		Min(0).
		Span(8))
	return d
}
