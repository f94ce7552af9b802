package collector

import (
	"math"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// The Amp server source (source/ampserver) counts into a ThreadStore of
// its own, keyed by thread id, with source="server". What it adds to the
// store is here: the billed cost family and the server's own metrics.

// famBilled is what Amp bills for a thread (threadDisplayCostInfo), per
// kind; l1 kind. Persisted: never rename.
const famBilled family = "billed_usd"

// Billed cost kinds, the values of amp_billed_cost_usd_total's kind label.
var BilledKinds = []string{"free", "paid", "subscription", "total"}

func init() {
	familyScale[famBilled] = 1e10
	knownFamilies[famBilled] = true
}

// ServerPathPrefix prefixes the "path" of a server thread in a store.
const ServerPathPrefix = "amp-server:"

// ServerPath is the store path of server thread id.
func ServerPath(id string) string { return ServerPathPrefix + id }

// ServerPaths lists the present server threads of the store.
func (s *ThreadStore) ServerPaths() []string {
	s.mu.RLock()
	defer s.mu.RUnlock()
	var out []string
	for p := range s.files {
		if strings.HasPrefix(p, ServerPathPrefix) {
			out = append(out, p)
		}
	}
	sort.Strings(out)
	return out
}

// ApplyBilled records what Amp bills for thread key, in USD per kind. Like
// every counter it only grows: each kind keeps the largest value seen for
// the thread, and the totals grow by the difference.
func (s *ThreadStore) ApplyBilled(key string, usd map[string]float64) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	rec := s.threads[key]
	if rec == nil {
		return false // only threads the store counts are billed here
	}
	changed := false
	for kind, v := range usd {
		if math.IsNaN(v) || v <= 0 {
			continue
		}
		k := seriesKey{famBilled, kind, ""}
		id := s.series.id(k)
		n := fixed(famBilled, v)
		var was int64
		if i, ok := rec.contrib.find(id); ok {
			was = rec.contrib[i].v
		}
		if n > was {
			if !changed {
				// A delta taken earlier shares the record's series and
				// reads them without the lock: change a copy.
				rec.contrib = slices.Clone(rec.contrib)
			}
			s.addTo(rec, k, n-was)
			changed = true
		}
	}
	if changed {
		s.lastChange = s.now()
		s.generation++
		// Saved with the next delta: the bill often arrives after the
		// thread's counts were saved, and an unchanged thread is not
		// fetched again after a restart.
		s.changedThreads[key] = struct{}{}
	}
	return changed
}

// SetServerStore makes the collector expose the Amp server source's store
// with source="server". Call it before registering the collector.
func (c *AmpCollector) SetServerStore(s *ThreadStore) {
	c.server = s
	c.billed = prometheus.NewDesc("amp_billed_cost_usd_total",
		"What Amp itself bills for the threads read from the Amp server (threadDisplayCostInfo), by kind: free, paid, subscription from its breakdown, total where it gives none. The real figure beside the amp_cost_usd_total estimate.",
		[]string{"source", "kind"}, nil)
}

// collectServer emits the server store's families and adds its context
// observations to the shared histograms; it returns the store's snapshot.
func (c *AmpCollector) collectServer(ch chan<- prometheus.Metric, threads map[string]int, contextBuckets histograms, contextSums map[string]float64) ThreadSnapshot {
	snap := c.server.Snapshot()
	for mode, n := range snap.Threads {
		threads[mode] += n
	}
	c.collectShared(ch, snap.totals, SourceServer)
	exchange := make([]float64, len(ExchangeBuckets)+1)
	h := histograms{"": exchange}
	for k, v := range snap.totals {
		switch k.fam {
		case famCredits:
			emit(ch, c.credits, prometheus.CounterValue, unfixed(k.fam, v), SourceServer, k.l1)
		case famContextBucket:
			contextBuckets.add(k.l1, k.l2, len(ContextBuckets), v)
		case famContextSum:
			contextSums[k.l1] += unfixed(k.fam, v)
		case famExchangeBucket:
			h.add("", k.l2, len(ExchangeBuckets), v)
		}
	}
	ch <- constHistogram(c.exchange, ExchangeBuckets, exchange, unfixed(famExchangeSum, snap.totals[seriesKey{famExchangeSum, "", ""}]), SourceServer)
	for _, kind := range BilledKinds {
		emit(ch, c.billed, prometheus.CounterValue, unfixed(famBilled, snap.totals[seriesKey{famBilled, kind, ""}]), SourceServer, kind)
	}
	if !snap.LastChange.IsZero() {
		emit(ch, c.lastChange, prometheus.GaugeValue, float64(snap.LastChange.UnixMilli())/1000, SourceServer)
	}
	return snap
}

// ServerMetrics are the Amp server source's own metrics.
type ServerMetrics struct {
	up        prometheus.Gauge
	lastSync  prometheus.Gauge
	requests  *prometheus.CounterVec
	entLimit  *prometheus.GaugeVec
	entRemain *prometheus.GaugeVec
	entUsed   *prometheus.GaugeVec
	entReset  *prometheus.GaugeVec
	mu        sync.Mutex
	window    string
}

// NewServerMetrics creates and registers the server source's metrics;
// methods are the API methods whose request counters start at zero.
func NewServerMetrics(reg prometheus.Registerer, methods []string) *ServerMetrics {
	m := &ServerMetrics{
		up: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "amp_server_up",
			Help: "1 when the last sync with the Amp server succeeded.",
		}),
		lastSync: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "amp_server_last_sync_timestamp_seconds",
			Help: "End of the last complete sync with the Amp server.",
		}),
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "amp_server_requests_total",
			Help: "Requests to the Amp server by API method and HTTP status code (error: no answer).",
		}, []string{"method", "code"}),
		entLimit: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "amp_entitlement_limit_usd",
			Help: "The Amp user's entitlement in the current window, in US dollars.",
		}, []string{"window"}),
		entRemain: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "amp_entitlement_remaining_usd",
			Help: "What is left of the Amp user's entitlement in the current window, in US dollars.",
		}, []string{"window"}),
		entUsed: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "amp_entitlement_used_ratio",
			Help: "Share of the Amp user's entitlement used in the current window (0–1).",
		}, []string{"window"}),
		entReset: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "amp_entitlement_window_reset_timestamp_seconds",
			Help: "When the Amp user's current entitlement window resets.",
		}, []string{"window"}),
	}
	reg.MustRegister(m.up, m.lastSync, m.requests, m.entLimit, m.entRemain, m.entUsed, m.entReset)
	for _, method := range methods {
		m.requests.WithLabelValues(method, "200")
	}
	return m
}

// Request counts one request.
func (m *ServerMetrics) Request(method, code string) { m.requests.WithLabelValues(method, code).Inc() }

// Up sets amp_server_up.
func (m *ServerMetrics) Up(ok bool) {
	if ok {
		m.up.Set(1)
	} else {
		m.up.Set(0)
	}
}

// Synced records the end of a complete sync.
func (m *ServerMetrics) Synced(at time.Time) { m.lastSync.Set(float64(at.UnixMilli()) / 1000) }

// Entitlement is the user's current entitlement window; nil fields are
// unknown.
type Entitlement struct {
	Window       string
	LimitUSD     *float64
	RemainingUSD *float64
	UsedRatio    *float64
	ResetsAt     time.Time
}

// maxWindowLabel bounds the window label (it comes from the server).
const maxWindowLabel = 32

// SetEntitlement shows the current window; the series of a previous window
// are dropped so only the current one is shown.
func (m *ServerMetrics) SetEntitlement(e Entitlement) {
	w := sanitizeWindow(e.Window)
	m.mu.Lock()
	defer m.mu.Unlock()
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
