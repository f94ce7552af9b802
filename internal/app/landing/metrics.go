package landing

import (
	"bytes"
	"net/http"
	"net/url"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// Metrics is a snapshot of the exporter's own metrics, gathered once per
// page: providers read their figures here rather than from the stores,
// so the page shows exactly what Prometheus scrapes.
type Metrics struct {
	families map[string]*dto.MetricFamily
	// Err is the gather error, if any (the families gathered are kept).
	Err error
}

// Gather snapshots g.
func Gather(g prometheus.Gatherer) Metrics {
	m := Metrics{families: map[string]*dto.MetricFamily{}}
	if g == nil {
		return m
	}
	mfs, err := g.Gather()
	m.Err = err
	for _, mf := range mfs {
		m.families[mf.GetName()] = mf
	}
	return m
}

// Has reports whether the family exists at all.
func (m Metrics) Has(name string) bool {
	_, ok := m.families[name]
	return ok
}

// Sum adds up the family's series whose labels include every pair in
// match (a counter, gauge or untyped value; histograms and summaries
// count their sample count). ok is false when no series matched.
func (m Metrics) Sum(name string, match map[string]string) (sum float64, ok bool) {
	mf := m.families[name]
	if mf == nil {
		return 0, false
	}
	for _, s := range mf.GetMetric() {
		if !matches(s, match) {
			continue
		}
		ok = true
		switch {
		case s.Counter != nil:
			sum += s.GetCounter().GetValue()
		case s.Gauge != nil:
			sum += s.GetGauge().GetValue()
		case s.Untyped != nil:
			sum += s.GetUntyped().GetValue()
		case s.Histogram != nil:
			sum += float64(s.GetHistogram().GetSampleCount())
		case s.Summary != nil:
			sum += float64(s.GetSummary().GetSampleCount())
		}
	}
	return sum, ok
}

// SumPtr is Sum as a pointer: nil when no series matched (not applicable).
func (m Metrics) SumPtr(name string, match map[string]string) *float64 {
	if v, ok := m.Sum(name, match); ok {
		return &v
	}
	return nil
}

// Time reads a _timestamp_seconds gauge (the largest matching one); zero
// when there is none.
func (m Metrics) Time(name string, match map[string]string) time.Time {
	mf := m.families[name]
	if mf == nil {
		return time.Time{}
	}
	var newest float64
	for _, s := range mf.GetMetric() {
		if matches(s, match) && s.GetGauge().GetValue() > newest {
			newest = s.GetGauge().GetValue()
		}
	}
	if newest <= 0 {
		return time.Time{}
	}
	return time.UnixMilli(int64(newest * 1000))
}

func matches(s *dto.Metric, match map[string]string) bool {
	n := 0
	for _, lp := range s.GetLabel() {
		if v, ok := match[lp.GetName()]; ok {
			if v != lp.GetValue() {
				return false
			}
			n++
		}
	}
	return n == len(match)
}

// capture is the ResponseWriter the toolkit's page is rendered into once.
type capture struct {
	header http.Header
	body   bytes.Buffer
}

func (c *capture) Header() http.Header {
	if c.header == nil {
		c.header = http.Header{}
	}
	return c.header
}

func (c *capture) Write(p []byte) (int, error) { return c.body.Write(p) }

func (c *capture) WriteHeader(int) {}

func mustURL(path string) *url.URL { return &url.URL{Path: path} }
