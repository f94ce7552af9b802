package otlp

import (
	dto "github.com/prometheus/client_model/go"

	"github.com/amp-exporter/amp-exporter/store"
)

// KeepRestored drops the saved start time of every series whose total did
// not come back from storage. mfs are the series of the restored stores,
// gathered once after the state is restored and before any source counts
// (the caller leaves out the counters of this process: its own, Go's,
// the process's). A saved start is only true of a series that still
// carries the total counted since then: one present there with a non-zero
// value (a counter's value, a histogram's or summary's count),
// gen_ai.client.token.usage included (a sender that does not send it
// never asks for its start). Every other series gets a new start time when
// it is first pushed, so a receiver sees it start again instead of a drop
// under an unchanged start; a restored series at zero gets one too, which
// doubles nothing. It returns how many start times were dropped.
func KeepRestored(mfs []*dto.MetricFamily, starts *store.SeriesStarts) int {
	if starts == nil {
		return 0
	}
	keep := map[uint64]struct{}{}
	var c converter
	add := func(name string, labels []*dto.LabelPair, v float64) {
		if v != 0 {
			keep[c.seriesKey(name, labels)] = struct{}{}
		}
	}
	for _, mf := range mfs {
		for _, x := range mf.GetMetric() {
			switch mf.GetType() {
			case dto.MetricType_COUNTER:
				add(mf.GetName(), x.GetLabel(), x.GetCounter().GetValue())
			case dto.MetricType_HISTOGRAM, dto.MetricType_GAUGE_HISTOGRAM:
				add(mf.GetName(), x.GetLabel(), float64(x.GetHistogram().GetSampleCount()))
			case dto.MetricType_SUMMARY:
				add(mf.GetName(), x.GetLabel(), float64(x.GetSummary().GetSampleCount()))
			}
		}
	}
	for k, v := range genAISums(mfs) {
		add(GenAITokenUsage, genAILabels(k.model, k.tokenType), v)
	}
	return starts.Retain(func(key uint64) bool {
		_, ok := keep[key]
		return ok
	})
}
