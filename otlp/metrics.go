package otlp

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/amp-exporter/amp-exporter/remotewrite"
)

// Metrics are the sender's own metrics, shared by every receiver; a
// receiver is told apart by url_hash (remotewrite.URLHash of its endpoint),
// never by its URL.
type Metrics struct {
	points      *prometheus.CounterVec
	lastSuccess *prometheus.GaugeVec
}

// Results of a push, the result label of
// amp_exporter_otlp_datapoints_total. Every data point of a push ends in
// exactly one of them.
const (
	ResultSent     = "sent"     // accepted by the receiver
	ResultRejected = "rejected" // refused in a partial-success answer; not sent again
	ResultFailed   = "failed"   // refused for good: a 4xx other than 429, a 5xx other than 502/503/504, or a redirect
	ResultDropped  = "dropped"  // given up: still failing when the interval ran out, or at shutdown
)

// NewMetrics registers the sender's metrics on reg: data points by url_hash
// and result, and the last success by url_hash. The caller builds them
// (the application from their rows of the collector's table).
func NewMetrics(reg prometheus.Registerer, points *prometheus.CounterVec, lastSuccess *prometheus.GaugeVec) *Metrics {
	m := &Metrics{points: points, lastSuccess: lastSuccess}
	reg.MustRegister(m.points, m.lastSuccess)
	return m
}

func (m *Metrics) init(hash string) {
	for _, r := range []string{ResultSent, ResultRejected, ResultFailed, ResultDropped} {
		m.points.WithLabelValues(hash, r)
	}
}

// URLHash is the url_hash label of an endpoint, as remote-write's.
func URLHash(endpoint string) string { return remotewrite.URLHash(endpoint) }
