// Package remotewrite pushes what the exporter's /metrics serves to
// Prometheus remote-write receivers (protocol 1.0: a snappy-compressed
// prometheus.WriteRequest protobuf), every interval, with current values
// and the current timestamp.
//
// The WriteRequest is written with google.golang.org/protobuf's protowire
// (already a dependency through client_model): the 1.0 message is four
// small types, and a hand-written encoder of them costs ~100 lines against
// a prometheus/prometheus module graph (prompb) or an "unstable" pinned
// pseudo-version (client_golang/exp). The tests decode the output with the
// protobuf library's own reflection-based decoder and with a real
// Prometheus.
package remotewrite

import (
	"math"
	"sort"
	"strconv"

	dto "github.com/prometheus/client_model/go"
	"google.golang.org/protobuf/encoding/protowire"
)

// Label is one label pair of a series.
type Label struct {
	Name, Value string
}

// Series is one time series with its one current sample.
type Series struct {
	// Labels are sorted by name (bytewise, as the spec requires), so
	// __name__ comes before the lower-case names the exporter uses.
	Labels []Label
	Value  float64
	// Type and Help are the family's metadata (sent with 2.0 only).
	Type MetricType
	Help string
}

// MetricType is remote-write 2.0's Metadata.MetricType.
type MetricType int32

// The metric types the exporter's families have.
const (
	TypeUnspecified MetricType = 0
	TypeCounter     MetricType = 1
	TypeGauge       MetricType = 2
	TypeHistogram   MetricType = 3
	TypeGaugeHist   MetricType = 4
	TypeSummary     MetricType = 5
)

var metricTypes = map[dto.MetricType]MetricType{
	dto.MetricType_COUNTER:         TypeCounter,
	dto.MetricType_GAUGE:           TypeGauge,
	dto.MetricType_HISTOGRAM:       TypeHistogram,
	dto.MetricType_GAUGE_HISTOGRAM: TypeGaugeHist,
	dto.MetricType_SUMMARY:         TypeSummary,
}

// Convert turns gathered metric families into series: counters, gauges and
// untyped metrics as themselves, histograms as classic _bucket (with le,
// +Inf included), _sum and _count series, summaries as quantile, _sum and
// _count series. external labels are added to every series that does not
// carry that label itself (the series' own label wins, as with
// Prometheus's external_labels). Labels with empty values are left out (an
// empty label is an absent one in Prometheus), so an external label fills
// them.
func Convert(mfs []*dto.MetricFamily, external map[string]string) []Series {
	var out []Series
	for _, mf := range mfs {
		name := mf.GetName()
		for _, m := range mf.GetMetric() {
			base := baseLabels(m.GetLabel(), external)
			add := func(suffix string, v float64, extra ...Label) {
				s := newSeries(name+suffix, base, v, extra...)
				s.Type, s.Help = metricTypes[mf.GetType()], mf.GetHelp()
				out = append(out, s)
			}
			switch mf.GetType() {
			case dto.MetricType_COUNTER:
				add("", m.GetCounter().GetValue())
			case dto.MetricType_GAUGE:
				add("", m.GetGauge().GetValue())
			case dto.MetricType_UNTYPED:
				add("", m.GetUntyped().GetValue())
			case dto.MetricType_SUMMARY:
				s := m.GetSummary()
				for _, q := range s.GetQuantile() {
					add("", q.GetValue(), Label{"quantile", formatFloat(q.GetQuantile())})
				}
				add("_sum", s.GetSampleSum())
				add("_count", float64(s.GetSampleCount()))
			case dto.MetricType_HISTOGRAM, dto.MetricType_GAUGE_HISTOGRAM:
				h := m.GetHistogram()
				count := float64(h.GetSampleCount())
				if h.SampleCountFloat != nil {
					count = h.GetSampleCountFloat()
				}
				inf := false
				for _, b := range h.GetBucket() {
					c := float64(b.GetCumulativeCount())
					if b.CumulativeCountFloat != nil {
						c = b.GetCumulativeCountFloat()
					}
					inf = inf || math.IsInf(b.GetUpperBound(), 1)
					add("_bucket", c, Label{"le", formatFloat(b.GetUpperBound())})
				}
				if !inf {
					add("_bucket", count, Label{"le", "+Inf"})
				}
				add("_sum", h.GetSampleSum())
				add("_count", count)
			}
		}
	}
	return out
}

func baseLabels(pairs []*dto.LabelPair, external map[string]string) []Label {
	ls := make([]Label, 0, len(pairs)+len(external))
	own := make(map[string]bool, len(pairs))
	for _, p := range pairs {
		if p.GetValue() != "" {
			own[p.GetName()] = true
			ls = append(ls, Label{p.GetName(), p.GetValue()})
		}
	}
	for n, v := range external {
		if !own[n] && v != "" {
			ls = append(ls, Label{n, v})
		}
	}
	return ls
}

func newSeries(name string, base []Label, v float64, extra ...Label) Series {
	ls := make([]Label, 0, len(base)+len(extra)+1)
	ls = append(ls, Label{"__name__", name})
	ls = append(ls, base...)
	ls = append(ls, extra...)
	sort.Slice(ls, func(i, j int) bool { return ls[i].Name < ls[j].Name })
	return Series{Labels: ls, Value: v}
}

// formatFloat writes le and quantile values as the text exposition format
// does, so pushed series match scraped ones.
func formatFloat(f float64) string {
	switch {
	case math.IsInf(f, 1):
		return "+Inf"
	case math.IsInf(f, -1):
		return "-Inf"
	case math.IsNaN(f):
		return "NaN"
	}
	return strconv.FormatFloat(f, 'g', -1, 64)
}

// Field numbers of remote-write 1.0 (prometheus/prompb/remote.proto and
// types.proto).
const (
	writeRequestTimeseries = 1 // repeated TimeSeries
	timeSeriesLabels       = 1 // repeated Label
	timeSeriesSamples      = 2 // repeated Sample
	labelName              = 1 // string
	labelValue             = 2 // string
	sampleValue            = 1 // double
	sampleTimestamp        = 2 // int64, milliseconds since the epoch
)

// Marshal encodes series as a prometheus.WriteRequest, every sample at
// timestampMs.
func Marshal(series []Series, timestampMs int64) []byte {
	var buf, ts, lb []byte
	for _, s := range series {
		ts = ts[:0]
		for _, l := range s.Labels {
			lb = lb[:0]
			lb = protowire.AppendTag(lb, labelName, protowire.BytesType)
			lb = protowire.AppendString(lb, l.Name)
			lb = protowire.AppendTag(lb, labelValue, protowire.BytesType)
			lb = protowire.AppendString(lb, l.Value)
			ts = protowire.AppendTag(ts, timeSeriesLabels, protowire.BytesType)
			ts = protowire.AppendBytes(ts, lb)
		}
		lb = lb[:0]
		lb = protowire.AppendTag(lb, sampleValue, protowire.Fixed64Type)
		lb = protowire.AppendFixed64(lb, math.Float64bits(s.Value))
		lb = protowire.AppendTag(lb, sampleTimestamp, protowire.VarintType)
		lb = protowire.AppendVarint(lb, uint64(timestampMs))
		ts = protowire.AppendTag(ts, timeSeriesSamples, protowire.BytesType)
		ts = protowire.AppendBytes(ts, lb)
		buf = protowire.AppendTag(buf, writeRequestTimeseries, protowire.BytesType)
		buf = protowire.AppendBytes(buf, ts)
	}
	return buf
}
