package collector

import (
	"strconv"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/amp-exporter/amp-exporter/parser/streamjson"
	"github.com/amp-exporter/amp-exporter/store"
)

// AmpCollector exposes the Amp families from the threads and stream-json
// stores. It reads a snapshot per scrape: a scrape never waits on parsing.
type AmpCollector struct {
	threads *store.ThreadStore
	stream  *store.StreamStore

	threadsPresent *prometheus.Desc
	messages       *prometheus.Desc
	prompts        *prometheus.Desc
	tokens         *prometheus.Desc
	credits        *prometheus.Desc
	finished       *prometheus.Desc
	toolCalls      *prometheus.Desc
	contextUtil    *prometheus.Desc
	exchange       *prometheus.Desc
	lastActivity   *prometheus.Desc
	lastChange     *prometheus.Desc
	cost           *prometheus.Desc
	unpriced       *prometheus.Desc
	executions     *prometheus.Desc
	execDuration   *prometheus.Desc
	execTurns      *prometheus.Desc
	denials        *prometheus.Desc

	server *store.ThreadStore // the Amp server source, see SetServerStore (server.go)
	billed *prometheus.Desc   // set with server
}

// NewAmpCollector returns a collector over the stores; stream may be nil.
func NewAmpCollector(threads *store.ThreadStore, stream *store.StreamStore) *AmpCollector {
	return &AmpCollector{
		threads: threads,
		stream:  stream,
		cost: prometheus.NewDesc("amp_cost_usd_total",
			"Estimated spend in US dollars: tokens times list prices (amp_exporter_pricing_info says which table), counted at the prices in effect when the tokens were seen. An estimate, not a bill.",
			[]string{"source", "model"}, nil),
		unpriced: prometheus.NewDesc("amp_unpriced_tokens_total",
			"Tokens of models the price table does not know; they are missing from amp_cost_usd_total.",
			[]string{"source", "model"}, nil),
		executions: prometheus.NewDesc("amp_executions_total",
			"Amp stream-json runs finished, by outcome: success, error, or incomplete (the stream ended, or another run began, before a result line).",
			[]string{"outcome"}, nil),
		execDuration: prometheus.NewDesc("amp_execution_duration_seconds",
			"duration_ms of stream-json result lines.",
			[]string{"outcome"}, nil),
		execTurns: prometheus.NewDesc("amp_execution_turns",
			"num_turns of stream-json result lines.",
			nil, nil),
		denials: prometheus.NewDesc("amp_permission_denials_total",
			"Tools denied permission in stream-json runs, by normalized tool name.",
			[]string{"tool"}, nil),
		threadsPresent: prometheus.NewDesc("amp_threads",
			"Amp threads currently present and readable (local thread files, and threads listed on the Amp server when that source is on), by agent mode.",
			[]string{"agent_mode"}, nil),
		messages: prometheus.NewDesc("amp_messages_total",
			"Amp messages seen, by role (user, assistant).",
			[]string{"source", "role"}, nil),
		prompts: prometheus.NewDesc("amp_prompts_total",
			"Amp user messages that are prompts (not tool-result carriers).",
			[]string{"source"}, nil),
		tokens: prometheus.NewDesc("amp_tokens_total",
			"Amp tokens by model and type, as the files report them (for non-Anthropic providers cache_creation holds the uncached prompt).",
			[]string{"source", "model", "token_type"}, nil),
		credits: prometheus.NewDesc("amp_credits_total",
			"Amp credits charged, where the files carry them.",
			[]string{"source", "model"}, nil),
		finished: prometheus.NewDesc("amp_assistant_messages_total",
			"Finished Amp model turns by stop reason; cancelled and error turns under those names.",
			[]string{"source", "model", "stop_reason"}, nil),
		toolCalls: prometheus.NewDesc("amp_tool_calls_total",
			"Amp tool results that reached a terminal status, by normalized tool name.",
			[]string{"source", "tool", "status"}, nil),
		contextUtil: prometheus.NewDesc("amp_context_window_utilization_ratio",
			"Share of the context window used by each finished assistant message (totalInputTokens / maxInputTokens).",
			[]string{"model"}, nil),
		exchange: prometheus.NewDesc("amp_exchange_duration_seconds",
			"Time from a prompt being sent to the last assistant message of its exchange.",
			[]string{"source"}, nil),
		lastActivity: prometheus.NewDesc("amp_thread_last_activity_timestamp_seconds",
			"Newest activity seen in any Amp thread (prompt sent, inference finished, thread created).",
			nil, nil),
		lastChange: prometheus.NewDesc("amp_exporter_source_last_change_timestamp_seconds",
			"When the exporter last saw a source's data change.",
			[]string{"source"}, nil),
	}
}

// Describe implements prometheus.Collector.
func (c *AmpCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.threadsPresent, c.messages, c.prompts, c.tokens, c.credits,
		c.finished, c.toolCalls, c.contextUtil, c.exchange, c.lastActivity, c.lastChange,
		c.executions, c.execDuration, c.execTurns, c.denials, c.cost, c.unpriced} {
		ch <- d
	}
	if c.server != nil {
		ch <- c.billed
	}
}

func emit(ch chan<- prometheus.Metric, desc *prometheus.Desc, t prometheus.ValueType, v float64, labels ...string) {
	m, err := prometheus.NewConstMetric(desc, t, v, labels...)
	if err != nil {
		m = prometheus.NewInvalidMetric(desc, err)
	}
	ch <- m
}

// histograms gathers per-bucket counts of one family by its l1 label.
type histograms map[string][]float64

func (h histograms) add(l1, l2 string, n int, v int64) {
	b := h[l1]
	if b == nil {
		b = make([]float64, n+1)
		h[l1] = b
	}
	if i, err := strconv.Atoi(l2); err == nil && i >= 0 && i < len(b) {
		b[i] += float64(v)
	}
}

// Collect implements prometheus.Collector.
func (c *AmpCollector) Collect(ch chan<- prometheus.Metric) {
	snap := c.threads.Snapshot()
	contextBuckets, contextSums := histograms{}, map[string]float64{}
	if c.server != nil {
		if s := c.collectServer(ch, snap.Threads, contextBuckets, contextSums); s.LastActivity.After(snap.LastActivity) {
			snap.LastActivity = s.LastActivity
		}
	}
	for mode, n := range snap.Threads {
		emit(ch, c.threadsPresent, prometheus.GaugeValue, float64(n), mode)
	}
	c.collectThreadStore(ch, snap, store.SourceThreads, contextBuckets, contextSums)
	for model, b := range contextBuckets {
		ch <- constHistogram(c.contextUtil, store.ContextBuckets, b, contextSums[model], model)
	}
	if !snap.LastActivity.IsZero() {
		emit(ch, c.lastActivity, prometheus.GaugeValue, float64(snap.LastActivity.UnixMilli())/1000)
	}
	if c.stream != nil {
		c.collectStream(ch)
	}
}

// collectThreadStore emits what a thread store (local files or the Amp
// server) counted under source src: the shared families, credits, the
// exchange histogram and the last change; its context observations are
// added to contextBuckets and contextSums, which both stores share
// (amp_context_window_utilization_ratio has no source label).
func (c *AmpCollector) collectThreadStore(ch chan<- prometheus.Metric, snap store.ThreadSnapshot, src string,
	contextBuckets histograms, contextSums map[string]float64) {
	totals := snap.Totals()
	c.collectShared(ch, totals, src)
	exchange := histograms{"": make([]float64, len(store.ExchangeBuckets)+1)}
	for k, v := range totals {
		switch k.Fam {
		case store.FamCredits:
			emit(ch, c.credits, prometheus.CounterValue, store.Unfixed(k.Fam, v), src, k.L1)
		case store.FamContextBucket:
			contextBuckets.add(k.L1, k.L2, len(store.ContextBuckets), v)
		case store.FamContextSum:
			contextSums[k.L1] += store.Unfixed(k.Fam, v)
		case store.FamExchangeBucket:
			exchange.add("", k.L2, len(store.ExchangeBuckets), v)
		}
	}
	exchangeSum := totals[store.SeriesKey{Fam: store.FamExchangeSum}]
	ch <- constHistogram(c.exchange, store.ExchangeBuckets, exchange[""], store.Unfixed(store.FamExchangeSum, exchangeSum), src)
	if !snap.LastChange.IsZero() {
		emit(ch, c.lastChange, prometheus.GaugeValue, float64(snap.LastChange.UnixMilli())/1000, src)
	}
}

// collectShared emits the families both sources feed.
func (c *AmpCollector) collectShared(ch chan<- prometheus.Metric, totals map[store.SeriesKey]int64, src string) {
	// Known series start at zero so rate() and alerts work from the first
	// scrape.
	emit(ch, c.messages, prometheus.CounterValue, float64(totals[store.SeriesKey{Fam: store.FamMessages, L1: "user", L2: ""}]), src, "user")
	emit(ch, c.messages, prometheus.CounterValue, float64(totals[store.SeriesKey{Fam: store.FamMessages, L1: "assistant", L2: ""}]), src, "assistant")
	emit(ch, c.prompts, prometheus.CounterValue, float64(totals[store.SeriesKey{Fam: store.FamPrompts, L1: "", L2: ""}]), src)
	for k, v := range totals {
		switch k.Fam {
		case store.FamTokens:
			emit(ch, c.tokens, prometheus.CounterValue, store.Unfixed(k.Fam, v), src, k.L1, k.L2)
		case store.FamFinished:
			emit(ch, c.finished, prometheus.CounterValue, store.Unfixed(k.Fam, v), src, k.L1, k.L2)
		case store.FamToolCalls:
			emit(ch, c.toolCalls, prometheus.CounterValue, store.Unfixed(k.Fam, v), src, k.L1, k.L2)
		case store.FamCost:
			emit(ch, c.cost, prometheus.CounterValue, store.Unfixed(k.Fam, v), src, k.L1)
		case store.FamUnpriced:
			emit(ch, c.unpriced, prometheus.CounterValue, store.Unfixed(k.Fam, v), src, k.L1)
		}
	}
}

func (c *AmpCollector) collectStream(ch chan<- prometheus.Metric) {
	snap := c.stream.Snapshot()
	c.collectShared(ch, snap.Totals(), store.SourceStream)
	for _, outcome := range []string{streamjson.OutcomeSuccess, streamjson.OutcomeError, streamjson.OutcomeIncomplete} {
		emit(ch, c.executions, prometheus.CounterValue, float64(snap.Totals()[store.SeriesKey{Fam: store.FamExecutions, L1: outcome, L2: ""}]), outcome)
	}
	durations := histograms{
		streamjson.OutcomeSuccess: make([]float64, len(store.ExecutionDurationBuckets)+1),
		streamjson.OutcomeError:   make([]float64, len(store.ExecutionDurationBuckets)+1),
	}
	durationSums := map[string]float64{}
	turns := histograms{"": make([]float64, len(store.ExecutionTurnsBuckets)+1)}
	for k, v := range snap.Totals() {
		switch k.Fam {
		case store.FamExecDurationBucket:
			durations.add(k.L1, k.L2, len(store.ExecutionDurationBuckets), v)
		case store.FamExecDurationSum:
			durationSums[k.L1] += store.Unfixed(k.Fam, v)
		case store.FamExecTurnsBucket:
			turns.add("", k.L2, len(store.ExecutionTurnsBuckets), v)
		case store.FamPermissionDenials:
			emit(ch, c.denials, prometheus.CounterValue, float64(v), k.L1)
		}
	}
	for outcome, b := range durations {
		ch <- constHistogram(c.execDuration, store.ExecutionDurationBuckets, b, durationSums[outcome], outcome)
	}
	ch <- constHistogram(c.execTurns, store.ExecutionTurnsBuckets, turns[""], store.Unfixed(store.FamExecTurnsSum, snap.Totals()[store.SeriesKey{Fam: store.FamExecTurnsSum, L1: "", L2: ""}]))
	if !snap.LastChange.IsZero() {
		emit(ch, c.lastChange, prometheus.GaugeValue, float64(snap.LastChange.UnixMilli())/1000, store.SourceStream)
	}
}

// constHistogram builds a histogram from per-bucket counts (the last one
// past the highest bound).
func constHistogram(desc *prometheus.Desc, bounds, perBucket []float64, sum float64, labels ...string) prometheus.Metric {
	cumulative := make(map[float64]uint64, len(bounds))
	var n uint64
	for i, bound := range bounds {
		n += uint64(perBucket[i])
		cumulative[bound] = n
	}
	n += uint64(perBucket[len(bounds)])
	m, err := prometheus.NewConstHistogram(desc, n, sum, cumulative, labels...)
	if err != nil {
		return prometheus.NewInvalidMetric(desc, err)
	}
	return m
}
