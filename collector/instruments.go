package collector

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
)

// The instruments set by code (the exporter's own metrics, the Amp server
// source's) are built from their row of the table, where their name, HELP,
// labels and buckets are written once: a constructor given a name whose
// row has another type or labels panics at start-up, never at a scrape.

// rowOf returns the row of a metric, which must be of type t.
func rowOf(name string, t Type) *Metric {
	m := byName[name]
	if m == nil {
		panic("collector: no row for metric " + name)
	}
	if m.Type != t {
		panic(fmt.Sprintf("collector: %s is a %s, built as a %s", name, m.Type, t))
	}
	return m
}

// rowOfScalar is rowOf for an instrument without labels.
func rowOfScalar(name string, t Type) *Metric {
	m := rowOf(name, t)
	if len(m.AllLabels()) > 0 {
		panic(fmt.Sprintf("collector: %s has labels %v, built without", name, m.AllLabels()))
	}
	return m
}

// NewCounterVec is the counter of a row, with its labels.
func NewCounterVec(name string) *prometheus.CounterVec {
	m := rowOf(name, Counter)
	return prometheus.NewCounterVec(prometheus.CounterOpts{Name: m.Name, Help: m.Help}, m.AllLabels())
}

// NewGaugeVec is the gauge of a row, with its labels.
func NewGaugeVec(name string) *prometheus.GaugeVec {
	m := rowOf(name, Gauge)
	return prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: m.Name, Help: m.Help}, m.AllLabels())
}

// newHistogramVec is the histogram of a row, with its labels and buckets.
func newHistogramVec(name string) *prometheus.HistogramVec {
	m := rowOf(name, Histogram)
	return prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: m.Name, Help: m.Help, Buckets: m.Buckets}, m.AllLabels())
}

// newCounter is the counter of a row without labels.
func newCounter(name string) prometheus.Counter {
	m := rowOfScalar(name, Counter)
	return prometheus.NewCounter(prometheus.CounterOpts{Name: m.Name, Help: m.Help})
}

// newGauge is the gauge of a row without labels.
func newGauge(name string) prometheus.Gauge {
	m := rowOfScalar(name, Gauge)
	return prometheus.NewGauge(prometheus.GaugeOpts{Name: m.Name, Help: m.Help})
}

// newHistogram is the histogram of a row without labels.
func newHistogram(name string) prometheus.Histogram {
	m := rowOfScalar(name, Histogram)
	return prometheus.NewHistogram(prometheus.HistogramOpts{Name: m.Name, Help: m.Help, Buckets: m.Buckets})
}
