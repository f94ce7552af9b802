package collector

import (
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/amp-exporter/amp-exporter/store"
	"github.com/prometheus/client_golang/prometheus"
)

// SetAmpServerStore makes the collector expose the Amp server source's store
// with source="server". Call it before registering the collector.
func (c *AmpCollector) SetAmpServerStore(s *store.ThreadStore) { c.ampServer = s }

// AmpServerMetrics are the Amp server source's own metrics.
type AmpServerMetrics struct {
	up        prometheus.Gauge
	lastSync  prometheus.Gauge
	requests  *prometheus.CounterVec
	bytes     *prometheus.CounterVec
	skipped   *prometheus.CounterVec
	refreshes *prometheus.CounterVec
	entLimit  *prometheus.GaugeVec
	entRemain *prometheus.GaugeVec
	entUsed   *prometheus.GaugeVec
	entReset  *prometheus.GaugeVec
	mu        sync.Mutex
	window    string
	last      *Entitlement // the window last set, for the spend summary
	synced    atomic.Bool
}

// NewAmpServerMetrics creates and registers the server source's metrics;
// methods are the API methods whose request counters start at zero.
func NewAmpServerMetrics(reg prometheus.Registerer, methods []string) *AmpServerMetrics {
	m := &AmpServerMetrics{
		up:        newGauge(NameServerUp),
		lastSync:  newGauge(NameServerLastSync),
		requests:  NewCounterVec(NameServerRequests),
		bytes:     NewCounterVec(NameServerResponseBytes),
		skipped:   NewCounterVec(NameServerThreadsSkipped),
		refreshes: NewCounterVec(NameServerLoginRefreshes),
		entLimit:  NewGaugeVec(NameEntitlementLimit),
		entRemain: NewGaugeVec(NameEntitlementRemaining),
		entUsed:   NewGaugeVec(NameEntitlementUsed),
		entReset:  NewGaugeVec(NameEntitlementWindowEnds),
	}
	reg.MustRegister(m.up, m.lastSync, m.requests, m.bytes, m.skipped, m.refreshes, m.entLimit, m.entRemain, m.entUsed, m.entReset)
	for _, method := range methods {
		m.requests.WithLabelValues(method, "200")
	}
	for _, enc := range []string{"gzip", "zstd", "identity", "decoded"} {
		m.bytes.WithLabelValues(enc)
	}
	m.skipped.WithLabelValues("other_user")
	return m
}

// Request counts one request.
func (m *AmpServerMetrics) Request(method, code string) {
	m.requests.WithLabelValues(method, code).Inc()
}

// Bytes counts response bytes by encoding: "gzip", "zstd" or "identity" on the
// wire, "decoded" once decompressed; anything else is "other".
func (m *AmpServerMetrics) Bytes(encoding string, n int64) {
	switch encoding {
	case "gzip", "zstd", "identity", "decoded":
	default:
		encoding = "other"
	}
	if n > 0 {
		m.bytes.WithLabelValues(encoding).Add(float64(n))
	}
}

// LoginRefreshes makes the login refresh counters of these outcomes start
// at zero (an OAuth login: the others are never refreshed).
func (m *AmpServerMetrics) LoginRefreshes(outcomes []string) {
	for _, o := range outcomes {
		m.refreshes.WithLabelValues(o)
	}
}

// LoginRefreshed counts one refresh of the CLI's login by its outcome.
func (m *AmpServerMetrics) LoginRefreshed(outcome string) { m.refreshes.WithLabelValues(outcome).Inc() }

// ThreadSkipped counts a listed thread that is not counted.
func (m *AmpServerMetrics) ThreadSkipped(reason string) { m.skipped.WithLabelValues(reason).Inc() }

// Up sets amp_server_up.
func (m *AmpServerMetrics) Up(ok bool) {
	if ok {
		m.up.Set(1)
	} else {
		m.up.Set(0)
	}
}

// Synced records the end of a complete sync.
func (m *AmpServerMetrics) Synced(at time.Time) {
	m.lastSync.Set(float64(at.UnixMilli()) / 1000)
	m.synced.Store(true)
}

// SyncedOnce reports whether a sync has ever completed.
func (m *AmpServerMetrics) SyncedOnce() bool { return m.synced.Load() }

// Entitlement is the user's current entitlement window (store.Entitlement).
type Entitlement = store.Entitlement

// maxWindowLabel bounds the window label (it comes from the server).
const maxWindowLabel = 32

// SetEntitlement shows the current window; the series of a previous window
// are dropped so only the current one is shown.
func (m *AmpServerMetrics) SetEntitlement(e Entitlement) {
	w := sanitizeWindow(e.Window)
	m.mu.Lock()
	defer m.mu.Unlock()
	last := e
	last.Window = w
	m.last = &last
	if w != m.window {
		for _, v := range []*prometheus.GaugeVec{m.entLimit, m.entRemain, m.entUsed, m.entReset} {
			v.Reset()
		}
		m.window = w
	}
	set := func(v *prometheus.GaugeVec, x *float64) {
		if x != nil && !math.IsNaN(*x) && !math.IsInf(*x, 0) {
			v.WithLabelValues(w).Set(*x)
		}
	}
	set(m.entLimit, e.LimitUSD)
	set(m.entRemain, e.RemainingUSD)
	set(m.entUsed, e.UsedRatio)
	if !e.ResetsAt.IsZero() {
		m.entReset.WithLabelValues(w).Set(float64(e.ResetsAt.UnixMilli()) / 1000)
	}
}

// Entitlement is the window last set (its name sanitized as on the
// series), nil before the server reported one.
func (m *AmpServerMetrics) Entitlement() *Entitlement {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.last == nil {
		return nil
	}
	e := *m.last
	return &e
}

// sanitizeWindow keeps a window name short and plain; anything else is
// "other", an empty one "unknown".
func sanitizeWindow(w string) string {
	if w == "" {
		return "unknown"
	}
	if len(w) > maxWindowLabel {
		return "other"
	}
	for _, r := range w {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '-' || r == '.') {
			return "other"
		}
	}
	return w
}
