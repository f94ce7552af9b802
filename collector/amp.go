package collector

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/amp-exporter/amp-exporter/parser/streamjson"
	"github.com/amp-exporter/amp-exporter/store"
)

// AmpCollector exposes the Amp families from the threads and stream-json
// stores. It reads a snapshot per scrape: a scrape never waits on parsing.
type AmpCollector struct {
	threads *store.ThreadStore
	stream  *store.StreamStore
	server  *store.ThreadStore // the Amp server source, see SetServerStore (server.go)
}

// NewAmpCollector returns a collector over the stores; stream may be nil.
func NewAmpCollector(threads *store.ThreadStore, stream *store.StreamStore) *AmpCollector {
	return &AmpCollector{threads: threads, stream: stream}
}

// Describe implements prometheus.Collector: every row of a thread or
// stream-json store family (the billed cost with the server store only),
// and the gauges set from the snapshots.
func (c *AmpCollector) Describe(ch chan<- *prometheus.Desc) {
	for i := range Metrics {
		m := &Metrics[i]
		if m.Family != "" && !store.AmyFamily(m.Family) && (m.Name != NameBilledCost || c.server != nil) {
			ch <- descs[m.Name]
		}
	}
	describe(ch, NameThreads, NameLastActivity, NameSourceLastChange)
}

// Collect implements prometheus.Collector.
func (c *AmpCollector) Collect(ch chan<- prometheus.Metric) {
	r := newRenderer(ch)
	snap := c.threads.Snapshot()
	threads := map[string]int{}
	for mode, n := range snap.Threads {
		threads[mode] += n
	}
	lastActivity := snap.LastActivity
	c.collectThreadStore(r, snap, store.SourceThreads)
	if c.server != nil {
		s := c.server.Snapshot()
		for mode, n := range s.Threads {
			threads[mode] += n
		}
		if s.LastActivity.After(lastActivity) {
			lastActivity = s.LastActivity
		}
		c.collectThreadStore(r, s, store.SourceServer)
		r.zero(s.Totals(), store.FamBilled, store.SourceServer, store.BilledKinds...)
	}
	for mode, n := range threads {
		r.gauge(NameThreads, float64(n), mode)
	}
	if !lastActivity.IsZero() {
		r.gauge(NameLastActivity, float64(lastActivity.UnixMilli())/1000)
	}
	if c.stream != nil {
		c.collectStream(r)
	}
	r.flush()
}

// collectThreadStore renders what a thread store (local files or the Amp
// server) counted under source src. Its context observations join the other
// thread store's: amp_context_window_utilization_ratio has no source label.
func (c *AmpCollector) collectThreadStore(r *renderer, snap store.ThreadSnapshot, src string) {
	totals := snap.Totals()
	r.series(totals, src)
	zeroShared(r, totals, src)
	r.zeroHist(store.FamExchangeBucket, src)
	if !snap.LastChange.IsZero() {
		r.gauge(NameSourceLastChange, float64(snap.LastChange.UnixMilli())/1000, src)
	}
}

// zeroShared starts at zero the series of the families every Amp source
// feeds.
func zeroShared(r *renderer, totals map[store.SeriesKey]int64, src string) {
	r.zero(totals, store.FamMessages, src, "user", "assistant")
	r.zero(totals, store.FamPrompts, src)
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
