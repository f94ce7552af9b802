package otlp

import (
	"slices"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"go.opentelemetry.io/collector/pdata/pmetric"

	"github.com/amp-exporter/amp-exporter/store"
)

// every family type the exporter has, through one registry.
func gathered(t *testing.T) []*dto.MetricFamily {
	t.Helper()
	reg := prometheus.NewPedanticRegistry()
	c := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "amp_cost_usd_total", Help: "Estimated cost."}, []string{"model", "mode"})
	g := prometheus.NewGauge(prometheus.GaugeOpts{Name: "amp_entitlement_used_ratio", Help: "Used."})
	h := prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "amp_exchange_duration_seconds", Help: "Exchange time.", Buckets: []float64{1, 5, 10}}, []string{"model"})
	s := prometheus.NewSummary(prometheus.SummaryOpts{Name: "amp_x_bytes", Help: "A summary.", Objectives: map[float64]float64{0.5: 0.05}})
	u := prometheus.NewUntypedFunc(prometheus.UntypedOpts{Name: "amp_untyped", Help: "Untyped."}, func() float64 { return 42 })
	reg.MustRegister(c, g, h, s, u)
	c.WithLabelValues("claude", "smart").Add(1.25)
	c.WithLabelValues("gpt", "").Add(3)
	g.Set(0.5)
	for _, v := range []float64{0.5, 3, 3, 7, 60} {
		h.WithLabelValues("claude").Observe(v)
	}
	s.Observe(10)
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	return mfs
}

func metricByName(t *testing.T, md pmetric.Metrics, name string) pmetric.Metric {
	t.Helper()
	ms := md.ResourceMetrics().At(0).ScopeMetrics().At(0).Metrics()
	for i := 0; i < ms.Len(); i++ {
		if ms.At(i).Name() == name {
			return ms.At(i)
		}
	}
	t.Fatalf("no metric %s", name)
	return pmetric.Metric{}
}

func TestConvertEveryType(t *testing.T) {
	now := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	md, n := Convert(gathered(t), ConvertOptions{Resource: map[string]string{"service.name": "amp-exporter"}, Now: now})
	if n != 6 {
		t.Errorf("%d data points, want 6 (2 counters, a gauge, a histogram, a summary, an untyped)", n)
	}
	if md.ResourceMetrics().Len() != 1 || md.ResourceMetrics().At(0).ScopeMetrics().At(0).Scope().Name() != "" {
		t.Fatal("want one resource with an empty scope")
	}
	ts := uint64(now.UnixNano())

	cost := metricByName(t, md, "amp_cost_usd_total")
	if cost.Type() != pmetric.MetricTypeSum || !cost.Sum().IsMonotonic() || cost.Sum().AggregationTemporality() != pmetric.AggregationTemporalityCumulative {
		t.Fatalf("counter: %s", cost.Type())
	}
	if cost.Unit() != "{USD}" || cost.Description() != "Estimated cost." {
		t.Errorf("counter unit %q description %q", cost.Unit(), cost.Description())
	}
	dps := cost.Sum().DataPoints()
	if dps.Len() != 2 {
		t.Fatalf("%d counter points", dps.Len())
	}
	for i := 0; i < dps.Len(); i++ {
		dp := dps.At(i)
		attrs := dp.Attributes().AsRaw()
		switch attrs["model"] {
		case "claude":
			if dp.DoubleValue() != 1.25 || len(attrs) != 2 || attrs["mode"] != "smart" {
				t.Errorf("claude: %v %v", dp.DoubleValue(), attrs)
			}
		case "gpt":
			if _, ok := attrs["mode"]; ok || dp.DoubleValue() != 3 {
				t.Errorf("gpt: an empty label must be left out: %v %v", dp.DoubleValue(), attrs)
			}
		}
		if uint64(dp.Timestamp()) != ts || uint64(dp.StartTimestamp()) != ts {
			t.Errorf("times %d %d", dp.StartTimestamp(), dp.Timestamp())
		}
	}

	g := metricByName(t, md, "amp_entitlement_used_ratio")
	if g.Type() != pmetric.MetricTypeGauge || g.Gauge().DataPoints().At(0).DoubleValue() != 0.5 || g.Unit() != "1" {
		t.Errorf("gauge %s %q", g.Type(), g.Unit())
	}
	if g.Gauge().DataPoints().At(0).StartTimestamp() != 0 {
		t.Error("a gauge point has no start time")
	}

	h := metricByName(t, md, "amp_exchange_duration_seconds")
	if h.Type() != pmetric.MetricTypeHistogram || h.Histogram().AggregationTemporality() != pmetric.AggregationTemporalityCumulative || h.Unit() != "s" {
		t.Fatalf("histogram %s %q", h.Type(), h.Unit())
	}
	hp := h.Histogram().DataPoints().At(0)
	// Observations 0.5, 3, 3, 7, 60 in buckets ≤1, ≤5, ≤10 and above.
	if !slices.Equal(hp.ExplicitBounds().AsRaw(), []float64{1, 5, 10}) || !slices.Equal(hp.BucketCounts().AsRaw(), []uint64{1, 2, 1, 1}) {
		t.Errorf("bounds %v counts %v, want [1 5 10] and [1 2 1 1]", hp.ExplicitBounds().AsRaw(), hp.BucketCounts().AsRaw())
	}
	if hp.Count() != 5 || hp.Sum() != 73.5 || uint64(hp.StartTimestamp()) != ts {
		t.Errorf("count %d sum %v start %d", hp.Count(), hp.Sum(), hp.StartTimestamp())
	}

	s := metricByName(t, md, "amp_x_bytes")
	if s.Type() != pmetric.MetricTypeSummary || s.Unit() != "By" {
		t.Fatalf("summary %s %q", s.Type(), s.Unit())
	}
	sp := s.Summary().DataPoints().At(0)
	if sp.Count() != 1 || sp.Sum() != 10 || sp.QuantileValues().Len() != 1 || sp.QuantileValues().At(0).Quantile() != 0.5 {
		t.Errorf("summary point %d %v %d", sp.Count(), sp.Sum(), sp.QuantileValues().Len())
	}

	u := metricByName(t, md, "amp_untyped")
	if u.Type() != pmetric.MetricTypeGauge || u.Gauge().DataPoints().At(0).DoubleValue() != 42 {
		t.Errorf("untyped %s", u.Type())
	}
}

// A histogram without buckets (only _sum and _count) is one OTLP bucket
// holding everything.
func TestConvertHistogramWithoutBuckets(t *testing.T) {
	count, sum := uint64(4), 9.0
	name, typ := "h_seconds", dto.MetricType_HISTOGRAM
	mf := &dto.MetricFamily{Name: &name, Type: &typ, Metric: []*dto.Metric{{Histogram: &dto.Histogram{SampleCount: &count, SampleSum: &sum}}}}
	md, _ := Convert([]*dto.MetricFamily{mf}, ConvertOptions{Now: time.Unix(1, 0)})
	hp := metricByName(t, md, "h_seconds").Histogram().DataPoints().At(0)
	if hp.ExplicitBounds().Len() != 0 || !slices.Equal(hp.BucketCounts().AsRaw(), []uint64{4}) {
		t.Fatalf("bounds %v counts %v", hp.ExplicitBounds().AsRaw(), hp.BucketCounts().AsRaw())
	}
}

// Start times come from the shared set: a series keeps the start of the
// first conversion that saw it, a new series starts at its first.
func TestConvertStartTimes(t *testing.T) {
	starts := store.NewSeriesStarts()
	t0 := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	mfs := gathered(t)
	Convert(mfs, ConvertOptions{Starts: starts, Now: t0})
	// counters (2), histogram, summary: the series with a start time.
	if starts.Len() != 4 {
		t.Fatalf("%d series started, want 4", starts.Len())
	}
	t1 := t0.Add(time.Minute)
	md, _ := Convert(mfs, ConvertOptions{Starts: starts, Now: t1})
	dps := metricByName(t, md, "amp_cost_usd_total").Sum().DataPoints()
	for i := 0; i < dps.Len(); i++ {
		if got := dps.At(i).StartTimestamp().AsTime(); !got.Equal(t0) || !dps.At(i).Timestamp().AsTime().Equal(t1) {
			t.Errorf("start %s time %s, want %s and %s", got, dps.At(i).Timestamp().AsTime(), t0, t1)
		}
	}
	// The same labels on another family, and other labels on the same
	// family, are other series.
	c := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "amp_tokens_total", Help: "h"}, []string{"model", "mode"})
	c.WithLabelValues("claude", "smart").Add(1)
	c2 := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "amp_cost_usd_total", Help: "h"}, []string{"model", "mode"})
	c2.WithLabelValues("claude", "rush").Add(1)
	reg := prometheus.NewRegistry()
	reg.MustRegister(c)
	more, _ := reg.Gather()
	reg2 := prometheus.NewRegistry()
	reg2.MustRegister(c2)
	more2, _ := reg2.Gather()
	t2 := t1.Add(time.Minute)
	md, _ = Convert(append(more, more2...), ConvertOptions{Starts: starts, Now: t2})
	for _, name := range []string{"amp_tokens_total", "amp_cost_usd_total"} {
		if got := metricByName(t, md, name).Sum().DataPoints().At(0).StartTimestamp().AsTime(); !got.Equal(t2) {
			t.Errorf("%s: a new series starts %s, want %s", name, got, t2)
		}
	}
}
