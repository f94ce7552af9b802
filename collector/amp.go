package collector

import (
	"strconv"

	"github.com/prometheus/client_golang/prometheus"
)

// Token types, the values of amp_tokens_total's token_type label.
var TokenTypes = []string{"input", "output", "cache_read", "cache_creation"}

// AmpCollector exposes the Amp families from the threads store. It reads a
// snapshot per scrape: a scrape never waits on parsing.
type AmpCollector struct {
	threads *ThreadStore

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
}

// NewAmpCollector returns a collector over the threads store.
func NewAmpCollector(threads *ThreadStore) *AmpCollector {
	return &AmpCollector{
		threads: threads,
		threadsPresent: prometheus.NewDesc("amp_threads",
			"Amp thread files currently present and readable, by agent mode.",
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
		c.finished, c.toolCalls, c.contextUtil, c.exchange, c.lastActivity, c.lastChange} {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (c *AmpCollector) Collect(ch chan<- prometheus.Metric) {
	snap := c.threads.Snapshot()
	src := SourceThreads
	emit := func(desc *prometheus.Desc, t prometheus.ValueType, v float64, labels ...string) {
		m, err := prometheus.NewConstMetric(desc, t, v, labels...)
		if err != nil {
			m = prometheus.NewInvalidMetric(desc, err)
		}
		ch <- m
	}
	for mode, n := range snap.Threads {
		emit(c.threadsPresent, prometheus.GaugeValue, float64(n), mode)
	}
	// Known series start at zero so rate() and alerts work from the first
	// scrape.
	emit(c.messages, prometheus.CounterValue, snap.totals[seriesKey{famMessages, "user", ""}], src, "user")
	emit(c.messages, prometheus.CounterValue, snap.totals[seriesKey{famMessages, "assistant", ""}], src, "assistant")
	emit(c.prompts, prometheus.CounterValue, snap.totals[seriesKey{famPrompts, "", ""}], src)

	contextBuckets := map[string][]float64{}
	contextSums := map[string]float64{}
	exchangeBuckets := make([]float64, len(ExchangeBuckets)+1)
	for k, v := range snap.totals {
		switch k.fam {
		case famTokens:
			emit(c.tokens, prometheus.CounterValue, v, src, k.l1, k.l2)
		case famCredits:
			emit(c.credits, prometheus.CounterValue, v, src, k.l1)
		case famFinished:
			emit(c.finished, prometheus.CounterValue, v, src, k.l1, k.l2)
		case famToolCalls:
			emit(c.toolCalls, prometheus.CounterValue, v, src, k.l1, k.l2)
		case famContextBucket:
			b := contextBuckets[k.l1]
			if b == nil {
				b = make([]float64, len(ContextBuckets)+1)
				contextBuckets[k.l1] = b
			}
			if i, err := strconv.Atoi(k.l2); err == nil && i >= 0 && i < len(b) {
				b[i] += v
			}
		case famContextSum:
			contextSums[k.l1] += v
		case famExchangeBucket:
			if i, err := strconv.Atoi(k.l2); err == nil && i >= 0 && i < len(exchangeBuckets) {
				exchangeBuckets[i] += v
			}
		}
	}
	for model, b := range contextBuckets {
		ch <- constHistogram(c.contextUtil, ContextBuckets, b, contextSums[model], model)
	}
	ch <- constHistogram(c.exchange, ExchangeBuckets, exchangeBuckets, snap.totals[seriesKey{famExchangeSum, "", ""}], src)
	if !snap.LastActivity.IsZero() {
		emit(c.lastActivity, prometheus.GaugeValue, float64(snap.LastActivity.UnixMilli())/1000)
	}
	if !snap.LastChange.IsZero() {
		emit(c.lastChange, prometheus.GaugeValue, float64(snap.LastChange.UnixMilli())/1000, src)
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
