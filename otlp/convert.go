// Package otlp pushes what the exporter's /metrics serves to OpenTelemetry
// receivers over OTLP/HTTP (an ExportMetricsServiceRequest in protobuf,
// gzip-compressed): an OpenTelemetry Collector, a vendor's OTLP intake, or
// Prometheus 3 with its OTLP receiver.
//
// The request is built with the OpenTelemetry Collector's pdata module
// (pmetric, pmetricotlp), not the OpenTelemetry SDK's otlpmetrichttp
// exporter: the SDK reports instruments it aggregates itself, with start
// times it owns, while the exporter already has its values in a gathered
// registry and must choose each series' start time (the first time it
// counted the series, kept across restarts in store.SeriesStarts).
package otlp

import (
	"math"
	"time"

	"github.com/cespare/xxhash/v2"
	dto "github.com/prometheus/client_model/go"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"

	"github.com/amp-exporter/amp-exporter/store"
)

// ConvertOptions say what Convert adds to the gathered families.
type ConvertOptions struct {
	// Resource are the resource attributes of the push (service.name,
	// service.instance.id, user, host…), set as given.
	Resource map[string]string
	// Starts hold the start time of every cumulative series (counters,
	// histograms, summaries); a series not in it starts at Now. Nil starts
	// every series at Now.
	Starts *store.SeriesStarts
	// Now is the time of every point.
	Now time.Time
	// GenAI also sends the token usage under the OpenTelemetry GenAI
	// semantic conventions' name (genai.go).
	GenAI bool
	// Previous holds the values of the sender's last push; a series whose
	// value went down since gets a new start time. Convert updates it.
	// Nil skips the check.
	Previous *Previous
}

// Convert turns gathered metric families into OTLP metrics, one metric per
// family under the family's own name: counters as cumulative monotonic
// sums, gauges and untyped metrics as gauges, histograms as cumulative
// explicit-bucket histograms, summaries as summaries. Labels become point
// attributes (labels with an empty value are left out, as Prometheus does),
// and the unit comes from the name (Unit). It also returns the number of
// data points.
func Convert(mfs []*dto.MetricFamily, o ConvertOptions) (pmetric.Metrics, int) {
	md := pmetric.NewMetrics()
	rm := md.ResourceMetrics().AppendEmpty()
	attrs := rm.Resource().Attributes()
	attrs.EnsureCapacity(len(o.Resource))
	for _, k := range sortedKeys(o.Resource) {
		attrs.PutStr(k, o.Resource[k])
	}
	// The scope is left empty: Prometheus and the Collector's Prometheus
	// exporters would otherwise add otel_scope_* labels to every series,
	// and the pushed series would no longer match the scraped ones.
	ms := rm.ScopeMetrics().AppendEmpty().Metrics()
	ms.EnsureCapacity(len(mfs))
	now := pcommon.NewTimestampFromTime(o.Now)
	c := converter{o: o, now: now}
	for _, mf := range mfs {
		switch mf.GetType() {
		case dto.MetricType_COUNTER, dto.MetricType_GAUGE, dto.MetricType_UNTYPED,
			dto.MetricType_HISTOGRAM, dto.MetricType_GAUGE_HISTOGRAM, dto.MetricType_SUMMARY:
		default:
			continue // a type this version does not know
		}
		if len(mf.GetMetric()) == 0 {
			continue
		}
		m := ms.AppendEmpty()
		m.SetName(mf.GetName())
		m.SetDescription(mf.GetHelp())
		m.SetUnit(Unit(mf.GetName(), mf.GetType()))
		switch mf.GetType() {
		case dto.MetricType_COUNTER:
			c.sum(m, mf)
		case dto.MetricType_GAUGE, dto.MetricType_UNTYPED:
			c.gauge(m, mf)
		case dto.MetricType_HISTOGRAM, dto.MetricType_GAUGE_HISTOGRAM:
			c.histogram(m, mf)
		case dto.MetricType_SUMMARY:
			c.summary(m, mf)
		}
	}
	if o.GenAI {
		c.genAI(ms, mfs)
	}
	if o.Previous != nil {
		o.Previous.done(o.Now)
	}
	return md, c.points
}

type converter struct {
	o      ConvertOptions
	now    pcommon.Timestamp
	d      xxhash.Digest
	points int
}

// start is the start time of the series name{labels}, whose cumulative
// value (a counter's value, a histogram's or summary's count) is now v.
func (c *converter) start(name string, labels []*dto.LabelPair, v float64) pcommon.Timestamp {
	if c.o.Starts == nil {
		return c.now
	}
	key := c.seriesKey(name, labels)
	if p := c.o.Previous; p != nil {
		last, seen := p.last[key]
		p.next[key] = v
		if seen && v < last {
			// It went down since this sender's last push: it counts
			// again from zero, and a receiver must see a new series
			// rather than a drop followed by the same counts again.
			return pcommon.NewTimestampFromTime(c.o.Starts.Restart(key, c.o.Now, p.at))
		}
	}
	return pcommon.NewTimestampFromTime(c.o.Starts.Start(key, c.o.Now))
}

// seriesKey hashes a series' name and its non-empty labels (gathered
// labels come sorted by name).
func (c *converter) seriesKey(name string, labels []*dto.LabelPair) uint64 {
	c.d.Reset()
	_, _ = c.d.WriteString(name)
	for _, l := range labels {
		if l.GetValue() == "" {
			continue
		}
		_, _ = c.d.Write([]byte{0xff})
		_, _ = c.d.WriteString(l.GetName())
		_, _ = c.d.Write([]byte{0xfe})
		_, _ = c.d.WriteString(l.GetValue())
	}
	return c.d.Sum64()
}

func putLabels(attrs pcommon.Map, labels []*dto.LabelPair) {
	attrs.EnsureCapacity(len(labels))
	for _, l := range labels {
		if l.GetValue() != "" {
			attrs.PutStr(l.GetName(), l.GetValue())
		}
	}
}

func (c *converter) sum(m pmetric.Metric, mf *dto.MetricFamily) {
	s := m.SetEmptySum()
	s.SetAggregationTemporality(pmetric.AggregationTemporalityCumulative)
	s.SetIsMonotonic(true)
	dps := s.DataPoints()
	dps.EnsureCapacity(len(mf.GetMetric()))
	for _, x := range mf.GetMetric() {
		dp := dps.AppendEmpty()
		putLabels(dp.Attributes(), x.GetLabel())
		dp.SetStartTimestamp(c.start(mf.GetName(), x.GetLabel(), x.GetCounter().GetValue()))
		dp.SetTimestamp(c.now)
		dp.SetDoubleValue(x.GetCounter().GetValue())
	}
	c.points += len(mf.GetMetric())
}

func (c *converter) gauge(m pmetric.Metric, mf *dto.MetricFamily) {
	dps := m.SetEmptyGauge().DataPoints()
	dps.EnsureCapacity(len(mf.GetMetric()))
	for _, x := range mf.GetMetric() {
		dp := dps.AppendEmpty()
		putLabels(dp.Attributes(), x.GetLabel())
		dp.SetTimestamp(c.now)
		if mf.GetType() == dto.MetricType_UNTYPED {
			dp.SetDoubleValue(x.GetUntyped().GetValue())
		} else {
			dp.SetDoubleValue(x.GetGauge().GetValue())
		}
	}
	c.points += len(mf.GetMetric())
}

// histogram converts Prometheus's cumulative buckets (each counting every
// observation up to its bound) into OTLP's, which count the observations
// between a bound and the one before; the last OTLP bucket, above every
// explicit bound, holds what only +Inf counted.
func (c *converter) histogram(m pmetric.Metric, mf *dto.MetricFamily) {
	h := m.SetEmptyHistogram()
	h.SetAggregationTemporality(pmetric.AggregationTemporalityCumulative)
	dps := h.DataPoints()
	dps.EnsureCapacity(len(mf.GetMetric()))
	var bounds []float64
	var counts []uint64
	for _, x := range mf.GetMetric() {
		ph := x.GetHistogram()
		dp := dps.AppendEmpty()
		putLabels(dp.Attributes(), x.GetLabel())
		total := ph.GetSampleCount()
		dp.SetStartTimestamp(c.start(mf.GetName(), x.GetLabel(), float64(total)))
		dp.SetTimestamp(c.now)
		dp.SetCount(total)
		dp.SetSum(ph.GetSampleSum())
		bounds, counts = bounds[:0], counts[:0]
		var below uint64
		for _, b := range ph.GetBucket() {
			if math.IsInf(b.GetUpperBound(), 1) {
				break // the overflow bucket is total - below
			}
			cum := b.GetCumulativeCount()
			bounds = append(bounds, b.GetUpperBound())
			counts = append(counts, cum-min(cum, below))
			below = max(below, cum)
		}
		counts = append(counts, total-min(total, below))
		dp.ExplicitBounds().FromRaw(bounds)
		dp.BucketCounts().FromRaw(counts)
	}
	c.points += len(mf.GetMetric())
}

func (c *converter) summary(m pmetric.Metric, mf *dto.MetricFamily) {
	dps := m.SetEmptySummary().DataPoints()
	dps.EnsureCapacity(len(mf.GetMetric()))
	for _, x := range mf.GetMetric() {
		s := x.GetSummary()
		dp := dps.AppendEmpty()
		putLabels(dp.Attributes(), x.GetLabel())
		dp.SetStartTimestamp(c.start(mf.GetName(), x.GetLabel(), float64(s.GetSampleCount())))
		dp.SetTimestamp(c.now)
		dp.SetCount(s.GetSampleCount())
		dp.SetSum(s.GetSampleSum())
		qs := dp.QuantileValues()
		for _, q := range s.GetQuantile() {
			v := qs.AppendEmpty()
			v.SetQuantile(q.GetQuantile())
			v.SetValue(q.GetValue())
		}
	}
	c.points += len(mf.GetMetric())
}
