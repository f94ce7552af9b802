package collector

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/amp-exporter/amp-exporter/parser/gitremote"
	"github.com/amp-exporter/amp-exporter/parser/streamjson"
	"github.com/amp-exporter/amp-exporter/parser/thread"
	"github.com/amp-exporter/amp-exporter/store"
)

// Watcher fallback reasons (store.FallbackReasons).
const (
	FallbackOverflow   = store.FallbackOverflow
	FallbackWatchError = store.FallbackWatchError
	FallbackAddFailed  = store.FallbackAddFailed
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
	unreadable    *prometheus.CounterVec
}

// NewExporterMetrics creates and registers the exporter's own metrics.
func NewExporterMetrics(reg prometheus.Registerer) *ExporterMetrics {
	m := &ExporterMetrics{
		parseErrors:   NewCounterVec(NameParseErrors),
		filesParsed:   newCounter(NameFilesParsed),
		parseDuration: newHistogramVec(NameParseDuration),
		reloadOK:      newGauge(NameReloadSuccessful),
		reloadTime:    newGauge(NameReloadSuccessTime),
		folded:        NewCounterVec(NameLabelValuesFolded),
		fallbacks:     NewCounterVec(NameWatcherFallbacks),
		polling:       NewGaugeVec(NameWatcherPolling),
		stateErrors:   NewCounterVec(NameStateErrors),
		stateDamage:   NewCounterVec(NameStateLoadErrors),
		stateWritten:  newCounter(NameStateBytesWritten),
		stateCompacts: newCounter(NameStateCompactions),
		stateSaveTime: newHistogram(NameStateSaveDuration),
		pricingInfo:   NewGaugeVec(NamePricingInfo),
		dirsMissing:   newGauge(NameThreadDirsMissing),
		unreadable:    NewCounterVec(NameRepositoryUnreadable),
	}
	for _, r := range []string{thread.ReasonNotThread, thread.ReasonTruncated, thread.ReasonSyntax, thread.ReasonTooLarge, thread.ReasonRead} {
		m.parseErrors.WithLabelValues(store.SourceThreads, r)
	}
	for _, r := range []string{streamjson.ReasonInvalidJSON, streamjson.ReasonNotObject, streamjson.ReasonLineTooLong} {
		m.parseErrors.WithLabelValues(store.SourceStream, r)
	}
	m.parseDuration.WithLabelValues(store.SourceThreads)
	for _, l := range []string{"model", "tool", "stop_reason", "agent_mode", "agent", store.RepositoryLabel} {
		m.folded.WithLabelValues(l)
	}
	for _, r := range gitremote.Reasons {
		m.unreadable.WithLabelValues(string(r))
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
		m.stateDamage, m.stateWritten, m.stateCompacts, m.stateSaveTime, m.unreadable)
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

// RepositoryUnreadable counts a thread whose git remote gave no
// repository value, by gitremote's reason (store.NewRepositories).
func (m *ExporterMetrics) RepositoryUnreadable(reason string) {
	m.unreadable.WithLabelValues(reason).Inc()
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
