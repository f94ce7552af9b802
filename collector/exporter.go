package collector

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/amp-exporter/amp-exporter/parser/streamjson"
	"github.com/amp-exporter/amp-exporter/parser/thread"
	"github.com/amp-exporter/amp-exporter/store"
)

// Watcher fallback reasons.
const (
	FallbackOverflow   = "overflow"
	FallbackWatchError = "watch_error"
	FallbackAddFailed  = "add_failed"
)

// ExporterMetrics are the exporter's own metrics (amp_exporter_*). Sources
// report through its methods, never through the vectors.
type ExporterMetrics struct {
	parseErrors   *prometheus.CounterVec
	filesParsed   prometheus.Counter
	parseDuration *prometheus.HistogramVec
	reloadOK      prometheus.Gauge
	reloadTime    prometheus.Gauge
	folded        *prometheus.CounterVec
	fallbacks     *prometheus.CounterVec
	polling       *prometheus.GaugeVec
	stateErrors   *prometheus.CounterVec
	stateDamage   *prometheus.CounterVec
	stateWritten  prometheus.Counter
	stateCompacts prometheus.Counter
	stateSaveTime prometheus.Histogram
	dirsMissing   prometheus.Gauge
	pricingInfo   *prometheus.GaugeVec
}

// NewExporterMetrics creates and registers the exporter's own metrics.
func NewExporterMetrics(reg prometheus.Registerer) *ExporterMetrics {
	m := &ExporterMetrics{
		parseErrors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "amp_exporter_parse_errors_total",
			Help: "Inputs the exporter could not parse, by source and reason; the last good data of each is kept.",
		}, []string{"source", "reason"}),
		filesParsed: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "amp_exporter_files_parsed_total",
			Help: "Thread files parsed successfully (unchanged files are not re-read).",
		}),
		parseDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "amp_exporter_parse_duration_seconds",
			Help:    "Time to read and parse one input.",
			Buckets: []float64{.0001, .00025, .0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1},
		}, []string{"source"}),
		reloadOK: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "amp_exporter_config_last_reload_successful",
			Help: "Whether the last configuration load succeeded (1) or kept the previous configuration (0).",
		}),
		reloadTime: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "amp_exporter_config_last_reload_success_timestamp_seconds",
			Help: "When the configuration was last loaded successfully.",
		}),
		folded: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "amp_exporter_label_values_folded_total",
			Help: "Distinct data values folded into \"other\" because their label reached limits.max_label_values.",
		}, []string{"label"}),
		fallbacks: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "amp_exporter_watcher_fallbacks_total",
			Help: "Times the thread watcher fell back to polling a directory (inotify overflow, watcher error, failed watch).",
		}, []string{"reason"}),
		polling: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "amp_exporter_watcher_polling",
			Help: "1 while thread directories are polled instead of watched with inotify.",
		}, []string{"source"}),
		stateErrors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "amp_exporter_state_errors_total",
			Help: "Failures to load or save the state under --storage.path.",
		}, []string{"operation"}),
		stateDamage: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "amp_exporter_state_load_errors_total",
			Help: "What loading the state found, by kind: torn_tail (a save cut off by a crash, expected after one), batch and record (damage: what it hit is lost, the rest kept), undecodable, not_a_log, legacy_file.",
		}, []string{"kind"}),
		stateWritten: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "amp_exporter_state_bytes_written_total",
			Help: "Bytes written to the state log by saves and compactions.",
		}),
		stateCompacts: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "amp_exporter_state_compactions_total",
			Help: "Rewrites of the state log without its superseded records.",
		}),
		stateSaveTime: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "amp_exporter_state_save_duration_seconds",
			Help:    "Time to save what changed to the state log, sync included.",
			Buckets: []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5},
		}),
		pricingInfo: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "amp_exporter_pricing_info",
			Help: "The price table in use (source and version); 1 for the current one.",
		}, []string{"source", "version"}),
		dirsMissing: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "amp_exporter_thread_dirs_missing",
			Help: "Configured thread directories that do not exist right now.",
		}),
	}
	for _, r := range []string{thread.ReasonNotThread, thread.ReasonTruncated, thread.ReasonSyntax, thread.ReasonTooLarge, thread.ReasonRead} {
		m.parseErrors.WithLabelValues(store.SourceThreads, r)
	}
	for _, r := range []string{streamjson.ReasonInvalidJSON, streamjson.ReasonNotObject, streamjson.ReasonLineTooLong} {
		m.parseErrors.WithLabelValues(store.SourceStream, r)
	}
	m.parseDuration.WithLabelValues(store.SourceThreads)
	for _, l := range []string{"model", "tool", "stop_reason", "agent_mode", "agent"} {
		m.folded.WithLabelValues(l)
	}
	for _, r := range []string{FallbackOverflow, FallbackWatchError, FallbackAddFailed} {
		m.fallbacks.WithLabelValues(r)
	}
	m.polling.WithLabelValues(store.SourceThreads)
	for _, op := range []string{"load", "save"} {
		m.stateErrors.WithLabelValues(op)
	}
	for _, k := range []string{"torn_tail", "batch", "record", "undecodable", "not_a_log", "legacy_file"} {
		m.stateDamage.WithLabelValues(k)
	}
	reg.MustRegister(m.parseErrors, m.filesParsed, m.parseDuration, m.reloadOK, m.reloadTime,
		m.folded, m.fallbacks, m.polling, m.stateErrors, m.dirsMissing, m.pricingInfo,
		m.stateDamage, m.stateWritten, m.stateCompacts, m.stateSaveTime)
	return m
}

// ParseFailed counts an input that could not be parsed.
func (m *ExporterMetrics) ParseFailed(source, reason string) {
	m.parseErrors.WithLabelValues(source, reason).Inc()
}

// Parsed records a successful parse of a thread file.
func (m *ExporterMetrics) Parsed(source string, d time.Duration) {
	if source == store.SourceThreads {
		m.filesParsed.Inc()
	}
	m.parseDuration.WithLabelValues(source).Observe(d.Seconds())
}

// LabelFolded counts a distinct value folded into "other".
func (m *ExporterMetrics) LabelFolded(label string) { m.folded.WithLabelValues(label).Inc() }

// WatcherFellBack counts a switch from inotify to polling.
func (m *ExporterMetrics) WatcherFellBack(reason string) {
	m.fallbacks.WithLabelValues(reason).Inc()
	m.polling.WithLabelValues(store.SourceThreads).Set(1)
}

// WatcherPolling sets whether the thread watcher polls.
func (m *ExporterMetrics) WatcherPolling(on bool) {
	v := 0.0
	if on {
		v = 1
	}
	m.polling.WithLabelValues(store.SourceThreads).Set(v)
}

// DirsMissing sets how many configured thread directories are missing.
func (m *ExporterMetrics) DirsMissing(n int) { m.dirsMissing.Set(float64(n)) }

// StateFailed counts a failed state load or save.
func (m *ExporterMetrics) StateFailed(operation string) {
	m.stateErrors.WithLabelValues(operation).Inc()
}

// StateLoadDamage counts what a state load found, by kind.
func (m *ExporterMetrics) StateLoadDamage(kind string, n int) {
	m.stateDamage.WithLabelValues(kind).Add(float64(n))
}

// StateSaved records a state save: the bytes it wrote and its duration.
func (m *ExporterMetrics) StateSaved(bytes int64, d time.Duration) {
	m.stateWritten.Add(float64(bytes))
	m.stateSaveTime.Observe(d.Seconds())
}

// StateCompacted records a compaction of the state log that wrote bytes.
func (m *ExporterMetrics) StateCompacted(bytes int64) {
	m.stateWritten.Add(float64(bytes))
	m.stateCompacts.Inc()
}

// ConfigLoaded records the outcome of a configuration (re)load.
func (m *ExporterMetrics) ConfigLoaded(ok bool, at time.Time) {
	if ok {
		m.reloadOK.Set(1)
		m.reloadTime.Set(float64(at.UnixMilli()) / 1000)
		return
	}
	m.reloadOK.Set(0)
}

// PricingInUse records the price table in effect.
func (m *ExporterMetrics) PricingInUse(source, version string) {
	m.pricingInfo.Reset()
	m.pricingInfo.WithLabelValues(source, version).Set(1)
}
