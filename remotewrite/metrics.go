package remotewrite

import (
	"crypto/sha256"
	"encoding/hex"
	"net/url"

	"github.com/prometheus/client_golang/prometheus"
)

// Metrics are the sender's own metrics, shared by every receiver; a
// receiver is told apart by url_hash, never by its URL (which may carry
// credentials).
type Metrics struct {
	samples     *prometheus.CounterVec
	lastSuccess *prometheus.GaugeVec
}

// Results of a push, the result label of
// amp_exporter_remote_write_samples_total. Every gathered sample ends in
// exactly one of them.
const (
	ResultSent    = "sent"    // accepted by the receiver (2xx)
	ResultFailed  = "failed"  // refused for good: a 4xx other than 429, or a redirect
	ResultDropped = "dropped" // given up: still failing when the interval ran out, or at shutdown
)

// NewMetrics registers the sender's metrics on reg: samples by url_hash
// and result, and the last success by url_hash. The caller builds them (the
// application from their rows of the collector's table, which holds their
// names and HELP).
func NewMetrics(reg prometheus.Registerer, samples *prometheus.CounterVec, lastSuccess *prometheus.GaugeVec) *Metrics {
	m := &Metrics{samples: samples, lastSuccess: lastSuccess}
	reg.MustRegister(m.samples, m.lastSuccess)
	return m
}

func (m *Metrics) init(hash string) {
	for _, r := range []string{ResultSent, ResultFailed, ResultDropped} {
		m.samples.WithLabelValues(hash, r)
	}
}

// URLHash is the url_hash label of a receiver: the first 12 hex digits of
// the SHA-256 of its URL without user info and query (so no credential
// reaches a label, and a rotated token in the query keeps the series).
func URLHash(raw string) string {
	key := raw
	if u, err := url.Parse(raw); err == nil {
		u.User = nil
		u.RawQuery = ""
		u.Fragment = ""
		key = u.String()
	}
	sum := sha256.Sum256([]byte(key))
	return hex.EncodeToString(sum[:])[:12]
}
