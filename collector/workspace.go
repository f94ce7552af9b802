package collector

import (
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/amp-exporter/amp-exporter/store"
)

// The workspace source's families. The money and token families it
// shares with the other sources (amp_tokens_total, amp_cost_usd_total,
// amp_billed_cost_usd_total) carry, for source="workspace" only, a user
// label: WorkspaceCollector renders them with it and does not describe
// them (the other sources' descriptors have no user label), so the other
// sources' series are unchanged (the names are in metrics.go).

const fromWorkspace = "Amp's workspace API"

// WorkspaceEndpoints are the endpoints the workspace source asks (the API client's names).
var WorkspaceEndpoints = []string{"token", "threads", store.WorkspaceEndpointUsage, store.WorkspaceEndpointDaily}

// WorkspaceLineKinds are amp_workspace_lines_total's kinds.
var WorkspaceLineKinds = []string{"added", "deleted", "modified"}

var workspaceRows = []Metric{
	{Name: NameWorkspaceUp, Type: Gauge, Source: fromWorkspace,
		Help: "1 when the last sync with Amp's workspace API succeeded."},
	{Name: NameWorkspaceLastSync, Type: Gauge, Source: fromWorkspace,
		Help: "End of the last complete sync with Amp's workspace API."},
	{Name: NameWorkspaceRequests, Type: Counter, Labels: []string{"endpoint", "code"}, Source: fromWorkspace,
		Help: "Requests to Amp's workspace API by endpoint and HTTP status code (error: no answer)."},
	{Name: NameWorkspaceResponseBytes, Type: Counter, Labels: []string{"endpoint"}, Source: fromWorkspace,
		Help: "Bytes of the answers of Amp's workspace API, by endpoint."},
	{Name: NameWorkspaceUnexpected, Type: Counter, Labels: []string{"endpoint", "reason"}, Source: fromWorkspace,
		Help: "Answers of Amp's workspace API whose shape was not the one expected, by endpoint and reason (unknown_field, missing_field, type_mismatch, null_item, sum_mismatch, …): what was understood is counted."},
	{Name: NameWorkspaceThreadsSkipped, Type: Counter, Labels: []string{"reason"}, Source: fromWorkspace,
		Help: "Threads the workspace lists whose usage is not counted, once per thread and reason: sub_thread (its parent's usage holds it), past_window (its usage is no longer served), not_found."},
	{Name: NameWorkspaceRestatements, Type: Counter, Labels: []string{"endpoint"}, Source: fromWorkspace,
		Help: "Answers of Amp's workspace API in which a figure counted before went down (a thread's usage, a member's day): never subtracted from the counters."},
	{Name: NameWorkspaceDailyUsage, Type: Counter, Labels: []string{"model", store.UserLabel}, Source: fromWorkspace,
		Help: "US dollars of the workspace's daily rollup per model and user, as Amp reports them: its growth, history included. A view of its own, never part of amp_cost_usd_total."},
	{Name: NameWorkspaceLines, Type: Counter, Labels: []string{"kind", store.UserLabel}, Source: fromWorkspace,
		Help: "Lines added, deleted and modified per user, from the workspace's daily rollup."},
}

// WorkspaceMetrics are the workspace source's own instruments.
type WorkspaceMetrics struct {
	up         prometheus.Gauge
	lastSync   prometheus.Gauge
	requests   *prometheus.CounterVec
	bytes      *prometheus.CounterVec
	unexpected *prometheus.CounterVec
	skipped    *prometheus.CounterVec
	synced     atomic.Bool
}

// NewWorkspaceMetrics creates and registers the source's instruments;
// the requests and bytes of endpoints, and the unexpected answers of each
// of them for each of reasons, start at zero.
func NewWorkspaceMetrics(reg prometheus.Registerer, endpoints, reasons []string) *WorkspaceMetrics {
	m := &WorkspaceMetrics{
		up:         newGauge(NameWorkspaceUp),
		lastSync:   newGauge(NameWorkspaceLastSync),
		requests:   NewCounterVec(NameWorkspaceRequests),
		bytes:      NewCounterVec(NameWorkspaceResponseBytes),
		unexpected: NewCounterVec(NameWorkspaceUnexpected),
		skipped:    NewCounterVec(NameWorkspaceThreadsSkipped),
	}
	reg.MustRegister(m.up, m.lastSync, m.requests, m.bytes, m.unexpected, m.skipped)
	for _, e := range endpoints {
		m.requests.WithLabelValues(e, "200")
		m.bytes.WithLabelValues(e)
		for _, r := range reasons {
			m.unexpected.WithLabelValues(e, r)
		}
	}
	for _, r := range store.WorkspaceSkipReasons {
		m.skipped.WithLabelValues(r)
	}
	return m
}

// Request counts one request.
func (m *WorkspaceMetrics) Request(endpoint, code string) {
	m.requests.WithLabelValues(endpoint, code).Inc()
}

// Bytes counts the bytes of an answer.
func (m *WorkspaceMetrics) Bytes(endpoint string, n int64) {
	if n > 0 {
		m.bytes.WithLabelValues(endpoint).Add(float64(n))
	}
}

// Unexpected counts an answer whose shape was not expected.
func (m *WorkspaceMetrics) Unexpected(endpoint, reason string) {
	m.unexpected.WithLabelValues(endpoint, reason).Inc()
}

// ThreadSkipped counts a thread not counted, once per thread and reason.
func (m *WorkspaceMetrics) ThreadSkipped(reason string) { m.skipped.WithLabelValues(reason).Inc() }

// Up sets amp_workspace_up.
func (m *WorkspaceMetrics) Up(ok bool) {
	if ok {
		m.up.Set(1)
	} else {
		m.up.Set(0)
	}
}

// Synced records the end of a complete sync.
func (m *WorkspaceMetrics) Synced(at time.Time) {
	m.lastSync.Set(float64(at.UnixMilli()) / 1000)
	m.synced.Store(true)
}

// SyncedOnce reports whether a sync has ever completed.
func (m *WorkspaceMetrics) SyncedOnce() bool { return m.synced.Load() }

// WorkspaceCollector renders the workspace store: the shared money and
// token families under source="workspace" with the user label, and the
// workspace's own families from the store.
type WorkspaceCollector struct {
	store *store.WorkspaceStore
	ready func() bool
	// descs of the shared families with the user label (not described).
	tokens, cost, billed *prometheus.Desc
}

// NewWorkspaceCollector returns a collector of st; ready gates the
// counters until the source's first complete sync (or a restored state),
// as SetReady does for the other sources. ready may be nil.
func NewWorkspaceCollector(st *store.WorkspaceStore, ready func() bool) *WorkspaceCollector {
	with := func(f store.Family) *prometheus.Desc {
		m := byFamily[f]
		return prometheus.NewDesc(m.Name, m.Help, append(m.AllLabels(), store.UserLabel), nil)
	}
	return &WorkspaceCollector{store: st, ready: ready,
		tokens: with(store.FamTokens), cost: with(store.FamCost), billed: with(store.FamBilled)}
}

// Describe sends the workspace's own families; the shared ones are
// rendered undescribed (their registered descriptors have no user label).
func (c *WorkspaceCollector) Describe(ch chan<- *prometheus.Desc) {
	describe(ch, NameWorkspaceRestatements, NameWorkspaceDailyUsage, NameWorkspaceLines)
}

// Collect implements prometheus.Collector.
func (c *WorkspaceCollector) Collect(ch chan<- prometheus.Metric) {
	if c.ready != nil && !c.ready() {
		return
	}
	snap := c.store.Snapshot()
	src := store.SourceWorkspace
	for k, v := range snap.Tokens {
		emit(ch, c.tokens, prometheus.CounterValue, float64(v), src, k.L1, k.L2, k.Repo, k.User)
	}
	for k, v := range snap.Cost {
		emit(ch, c.cost, prometheus.CounterValue, v, src, k.L1, k.Repo, k.User)
	}
	for k, v := range snap.Billed {
		emit(ch, c.billed, prometheus.CounterValue, v, src, k.L1, k.Repo, k.User)
	}
	for _, e := range []string{store.WorkspaceEndpointUsage, store.WorkspaceEndpointDaily} {
		emit(ch, descs[NameWorkspaceRestatements], prometheus.CounterValue, float64(snap.Restatements[e]), e)
	}
	for k, v := range snap.DailyUSD {
		emit(ch, descs[NameWorkspaceDailyUsage], prometheus.CounterValue, v, k.L1, k.User)
	}
	for k, v := range snap.Lines {
		emit(ch, descs[NameWorkspaceLines], prometheus.CounterValue, float64(v), k.L1, k.User)
	}
}
