package collector

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/amp-exporter/amp-exporter/parser/streamjson"
	"github.com/amp-exporter/amp-exporter/parser/thread"
	"github.com/amp-exporter/amp-exporter/store"
)

// AmpCollector exposes the Amp families from the threads and stream-json
// stores. It reads a snapshot per scrape: a scrape never waits on parsing.
type AmpCollector struct {
	threads   *store.ThreadStore
	stream    *store.StreamStore
	ampServer *store.ThreadStore // the Amp server source, see SetAmpServerStore (ampserver.go)
	// ready holds, per source (store.SourceThreads, SourceAmpServer,
	// SourceStream), whether that source has finished its first complete
	// pass; a source without one is always ready. See SetReady.
	ready map[string]func() bool
	// repos is the repository label's switch (SetRepositories); nil: on.
	repos *store.Repositories
}

// SetRepositories makes the collector follow the repository label's
// switch: while it is off, the series of every repository are shown
// merged, without the label (threads pinned to a repository before it was
// turned off keep it in the store, and show it again once it is on).
func (c *AmpCollector) SetRepositories(r *store.Repositories) { c.repos = r }

// totals are a snapshot's series as shown: merged over repositories while
// the label is off.
func (c *AmpCollector) totals(t map[store.SeriesKey]int64) map[store.SeriesKey]int64 {
	if c.repos.On() {
		return t
	}
	return store.WithoutRepository(t)
}

// NewAmpCollector returns a collector over the stores; stream may be nil.
func NewAmpCollector(threads *store.ThreadStore, stream *store.StreamStore) *AmpCollector {
	return &AmpCollector{threads: threads, stream: stream}
}

// SetReady gates the families of source (store.SourceThreads,
// store.SourceAmpServer, store.SourceStream) on ready: until it reports true,
// Collect sends none of that source's series, nor its part of the gauges
// computed from the stores (amp_threads, the last activity, its last
// change), nor amp_context_window_utilization_ratio, which adds the thread
// stores up. A counter read in the middle of a source's first pass holds
// part of its total; Prometheus would take the complete value that follows
// a restart, or the backfilled history before it, for a counter reset.
// Absent is honest, partial is not. Call it before registering the
// collector.
func (c *AmpCollector) SetReady(source string, ready func() bool) {
	if c.ready == nil {
		c.ready = map[string]func() bool{}
	}
	c.ready[source] = ready
}

// Ungated returns a collector over the same stores that shows every
// source's series whether or not its first pass is done: what the stores
// hold, for a caller that must see what the state restored before any
// source runs (the OTLP push keeps the saved start times of those series
// only). Never register it beside c.
func (c *AmpCollector) Ungated() *AmpCollector {
	u := *c
	u.ready = nil
	return &u
}

// Ready reports whether the families of source are shown: it has finished
// its first pass, or was never gated (SetReady). The landing page reads it
// so that it says a pass is running rather than showing zeros.
func (c *AmpCollector) Ready(source string) bool { return c.isReady(source) }

// isReady reports whether source has finished its first pass.
func (c *AmpCollector) isReady(source string) bool {
	f := c.ready[source]
	return f == nil || f()
}

// Describe implements prometheus.Collector: every row of a thread or
// stream-json store family (the billed cost with the server store only),
// and the gauges set from the snapshots.
func (c *AmpCollector) Describe(ch chan<- *prometheus.Desc) {
	for i := range Metrics {
		m := &Metrics[i]
		if m.Family != "" && !store.AmyFamily(m.Family) && (m.Family != store.FamBilled || c.ampServer != nil) {
			ch <- descs[m.Name]
		}
	}
	describe(ch, NameThreads, NameLastActivity, NameSourceLastChange)
}

// Collect implements prometheus.Collector. A source that has not finished
// its first pass is left out (SetReady).
func (c *AmpCollector) Collect(ch chan<- prometheus.Metric) {
	r := newRenderer(ch)
	threads := map[store.ThreadsKey]int{}
	var lastActivity time.Time
	filesReady := c.isReady(store.SourceThreads)
	serverReady := c.ampServer != nil && c.isReady(store.SourceAmpServer)
	// The context-window histogram has no source label: it adds the thread
	// stores up, so it is shown only once all of them are complete.
	r.unscoped = filesReady && (c.ampServer == nil || serverReady)
	for _, ts := range []struct {
		st    *store.ThreadStore
		src   string
		ready bool
	}{{c.threads, store.SourceThreads, filesReady}, {c.ampServer, store.SourceAmpServer, serverReady}} {
		if ts.st == nil || !ts.ready {
			continue
		}
		snap := ts.st.Snapshot()
		repoOn := c.repos.On()
		for tk, n := range snap.Threads {
			if !repoOn {
				tk.Repository = ""
			}
			threads[tk] += n
		}
		if snap.LastActivity.After(lastActivity) {
			lastActivity = snap.LastActivity
		}
		c.collectThreadStore(r, snap, ts.src)
		if ts.src == store.SourceAmpServer {
			r.zero(c.totals(snap.Totals()), store.FamBilled, store.SourceAmpServer, store.BilledKinds...)
		}
	}
	r.unscoped = true
	for tk, n := range threads {
		r.gauge(NameThreads, float64(n), tk.AgentMode, tk.Repository)
	}
	if !lastActivity.IsZero() {
		r.gauge(NameLastActivity, float64(lastActivity.UnixMilli())/1000)
	}
	if c.stream != nil && c.isReady(store.SourceStream) {
		c.collectStream(r)
	}
	r.flush()
}

// collectThreadStore renders what a thread store (local files or the Amp
// server) counted under source src. Its context observations join the other
// thread store's: amp_context_window_utilization_ratio has no source label.
func (c *AmpCollector) collectThreadStore(r *renderer, snap store.ThreadSnapshot, src string) {
	totals := c.totals(snap.Totals())
	r.series(totals, src)
	zeroShared(r, totals, src)
	r.zeroHist(store.FamExchangeBucket, src)
	r.zero(totals, store.FamShellCommands, src, thread.ShellOutcomes...)
	r.zero(totals, store.FamLinesUncounted, src, thread.UncountedReasons...)
	if !snap.LastChange.IsZero() {
		r.gauge(NameSourceLastChange, float64(snap.LastChange.UnixMilli())/1000, src)
	}
}

// zeroShared starts at zero the series of the families every Amp source
// feeds.
func zeroShared(r *renderer, totals map[store.SeriesKey]int64, src string) {
	r.zero(totals, store.FamMessages, src, "user", "assistant")
	r.zero(totals, store.FamPrompts, src)
	r.zero(totals, store.FamCommits, src)
	r.zero(totals, store.FamPullRequests, src)
	r.zero(totals, store.FamPushes, src, thread.PushOutcomes...)
}

func (c *AmpCollector) collectStream(r *renderer) {
	snap := c.stream.Snapshot()
	totals := snap.Totals()
	r.series(totals, store.SourceStream)
	zeroShared(r, totals, store.SourceStream)
	r.zero(totals, store.FamExecutions, "", streamjson.OutcomeSuccess, streamjson.OutcomeError, streamjson.OutcomeIncomplete)
	r.zeroHist(store.FamExecDurationBucket, "", streamjson.OutcomeSuccess, streamjson.OutcomeError)
	r.zeroHist(store.FamExecTurnsBucket, "")
	if !snap.LastChange.IsZero() {
		r.gauge(NameSourceLastChange, float64(snap.LastChange.UnixMilli())/1000, store.SourceStream)
	}
}
