package collector

import (
	"strconv"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/amp-exporter/amp-exporter/store"
)

// renderer turns store totals into metrics by the table: counters are sent
// as their series are met, histogram buckets and sums are gathered (over
// several stores for a histogram without a scope label) and sent by flush.
type renderer struct {
	ch    chan<- prometheus.Metric
	hists map[histKey]*histAcc
	// unscoped: render the families without a scope label (they add
	// several stores up); false while one of those stores is not shown.
	unscoped bool
}

type histKey struct {
	m            *Metric
	scope, label string
}

type histAcc struct {
	buckets []float64 // per bucket, the last past the highest bound
	sum     float64
}

func newRenderer(ch chan<- prometheus.Metric) *renderer {
	return &renderer{ch: ch, hists: map[histKey]*histAcc{}, unscoped: true}
}

// series renders every family of totals that has a row, under scope value
// scope (the source or the upstream; ignored by rows without a scope).
func (r *renderer) series(totals map[store.SeriesKey]int64, scope string) {
	for k, v := range totals {
		m := byFamily[k.Fam]
		if m == nil {
			continue // kept for counting, not exposed (store.FamTokensLong)
		}
		if m.Scope == "" && !r.unscoped {
			continue
		}
		if m.Type == Histogram {
			h := r.hist(m, scope, k.L1)
			if k.Fam == m.Sum {
				h.sum += store.Unfixed(k.Fam, v)
			} else if i, err := strconv.Atoi(k.L2); err == nil && i >= 0 && i < len(h.buckets) {
				h.buckets[i] += float64(v)
			}
			continue
		}
		r.emit(m, store.Unfixed(k.Fam, v), scope, k.L1, k.L2, k.Repo)
	}
}

// zero sends, for each of values that totals has no series of, a zero
// series of family f: known series start at zero, so rate() and alerts work
// from the first scrape. No values: the family's one series without labels.
// A value with a series under any repository has its series: the zero
// one, under none, would only be noise.
func (r *renderer) zero(totals map[store.SeriesKey]int64, f store.Family, scope string, values ...string) {
	m := byFamily[f]
	if len(values) == 0 {
		values = []string{""}
	}
	var seen map[string]bool
	if store.RepositoryFamily(f) {
		seen = map[string]bool{}
		for k := range totals {
			if k.Fam == f && k.L2 == "" {
				seen[k.L1] = true
			}
		}
	}
	for _, v := range values {
		if _, ok := totals[store.SeriesKey{Fam: f, L1: v}]; !ok && !seen[v] {
			r.emit(m, 0, scope, v, "", "")
		}
	}
}

// zeroHist makes the histogram of family f under each of values exist even
// without observations. No values: its one series without labels.
func (r *renderer) zeroHist(f store.Family, scope string, values ...string) {
	m := byFamily[f]
	if len(values) == 0 {
		values = []string{""}
	}
	for _, v := range values {
		r.hist(m, scope, v)
	}
}

func (r *renderer) hist(m *Metric, scope, label string) *histAcc {
	if m.Scope == "" {
		scope = ""
	}
	k := histKey{m, scope, label}
	h := r.hists[k]
	if h == nil {
		h = &histAcc{buckets: make([]float64, len(m.Buckets)+1)}
		r.hists[k] = h
	}
	return h
}

// emit sends one series of m: the scope value first, then as many of l1, l2
// as m has labels, and repo for its repository label ("" renders as no
// label: WithoutEmptyRepository).
func (r *renderer) emit(m *Metric, v float64, scope, l1, l2, repo string) {
	var buf [4]string
	values := buf[:0]
	if m.Scope != "" {
		values = append(values, scope)
	}
	for i, name := range m.Labels {
		switch {
		case name == store.RepositoryLabel:
			values = append(values, repo)
		case i == 0:
			values = append(values, l1)
		default:
			values = append(values, l2)
		}
	}
	emit(r.ch, descs[m.Name], valueType(m.Type), v, values...)
}

// gauge sends one series of a gauge set by code.
func (r *renderer) gauge(name string, v float64, labels ...string) {
	emit(r.ch, descs[name], prometheus.GaugeValue, v, labels...)
}

// flush sends the histograms gathered.
func (r *renderer) flush() {
	for k, h := range r.hists {
		var labels []string
		if k.m.Scope != "" {
			labels = append(labels, k.scope)
		}
		if len(k.m.Labels) > 0 {
			labels = append(labels, k.label)
		}
		r.ch <- constHistogram(descs[k.m.Name], k.m.Buckets, h.buckets, h.sum, labels...)
	}
	clear(r.hists)
}

func valueType(t Type) prometheus.ValueType {
	if t == Counter {
		return prometheus.CounterValue
	}
	return prometheus.GaugeValue
}

func emit(ch chan<- prometheus.Metric, desc *prometheus.Desc, t prometheus.ValueType, v float64, labels ...string) {
	m, err := prometheus.NewConstMetric(desc, t, v, labels...)
	if err != nil {
		m = prometheus.NewInvalidMetric(desc, err)
	}
	ch <- m
}

// constHistogram builds a histogram from per-bucket counts (the last one
// past the highest bound).
func constHistogram(desc *prometheus.Desc, bounds, perBucket []float64, sum float64, labels ...string) prometheus.Metric {
	cumulative := make(map[float64]uint64, len(bounds))
	var n uint64
	for i, bound := range bounds {
		n += uint64(perBucket[i])
		cumulative[bound] = n
	}
	n += uint64(perBucket[len(bounds)])
	m, err := prometheus.NewConstHistogram(desc, n, sum, cumulative, labels...)
	if err != nil {
		return prometheus.NewInvalidMetric(desc, err)
	}
	return m
}

// describe sends the descriptors of the named rows.
func describe(ch chan<- *prometheus.Desc, names ...string) {
	for _, n := range names {
		ch <- descs[n]
	}
}
