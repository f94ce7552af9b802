package otlp

import (
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/amp-exporter/amp-exporter/store"
)

// counterFamilies gathers one counter per name at the given value (zero
// values are still exposed: Add(0) creates the series).
func counterFamilies(t *testing.T, values map[string]float64) []*dto.MetricFamily {
	t.Helper()
	reg := prometheus.NewRegistry()
	for name, v := range values {
		c := prometheus.NewCounterVec(prometheus.CounterOpts{Name: name, Help: "h"}, []string{"model"})
		c.WithLabelValues("m").Add(v)
		reg.MustRegister(c)
	}
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	return mfs
}

func startOf(t *testing.T, mfs []*dto.MetricFamily, o ConvertOptions, name string) time.Time {
	t.Helper()
	md, _ := Convert(mfs, o)
	return metricByName(t, md, name).Sum().DataPoints().At(0).StartTimestamp().AsTime()
}

// After a restart, a saved start time is kept only for a series whose
// total came back (present and non-zero when the state was restored);
// one that counts again from zero, or is absent, gets a new start time
// when first pushed.
func TestKeepRestoredStarts(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	saved := store.NewSeriesStarts()
	before := counterFamilies(t, map[string]float64{"restored_total": 7, "own_total": 26, "zero_total": 3, "gone_total": 1})
	Convert(before, ConvertOptions{Starts: saved, Now: t0})

	starts := store.NewSeriesStarts()
	starts.Import(saved.Export())
	atRestore := counterFamilies(t, map[string]float64{"restored_total": 7, "zero_total": 0})
	if n := KeepRestored(atRestore, starts); n != 3 {
		t.Errorf("dropped %d start times, want 3 (own, zero, gone)", n)
	}
	t1 := t0.Add(time.Hour)
	after := counterFamilies(t, map[string]float64{"restored_total": 9, "own_total": 1, "zero_total": 1, "gone_total": 2})
	for _, tc := range []struct {
		name string
		want time.Time
	}{
		{"restored_total", t0},
		{"own_total", t1},
		{"zero_total", t1},
		{"gone_total", t1},
	} {
		if got := startOf(t, after, ConvertOptions{Starts: starts, Now: t1}, tc.name); !got.Equal(tc.want) {
			t.Errorf("%s: start %s, want %s", tc.name, got, tc.want)
		}
	}
}

// Within one process, a series whose value goes down between two pushes
// of a sender gets a new start time; a second sender that saw the same
// drop later keeps that one; a series that only grows keeps its start.
func TestStartTimeRestartsWhenValueGoesDown(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	starts := store.NewSeriesStarts()
	a, b := NewPrevious(), NewPrevious()
	opts := func(p *Previous, now time.Time) ConvertOptions {
		return ConvertOptions{Starts: starts, Now: now, Previous: p}
	}
	steps := []struct {
		p      *Previous
		at     time.Duration
		values map[string]float64
		want   map[string]time.Duration // start, after t0
	}{
		{a, 0, map[string]float64{"down_total": 5, "up_total": 5}, map[string]time.Duration{"down_total": 0, "up_total": 0}},
		{b, time.Second, map[string]float64{"down_total": 5, "up_total": 5}, map[string]time.Duration{"down_total": 0, "up_total": 0}},
		{a, time.Minute, map[string]float64{"down_total": 2, "up_total": 6}, map[string]time.Duration{"down_total": time.Minute, "up_total": 0}},
		{b, 2 * time.Minute, map[string]float64{"down_total": 3, "up_total": 7}, map[string]time.Duration{"down_total": time.Minute, "up_total": 0}},
		{a, 3 * time.Minute, map[string]float64{"down_total": 4, "up_total": 8}, map[string]time.Duration{"down_total": time.Minute, "up_total": 0}},
		{a, 4 * time.Minute, map[string]float64{"down_total": 1, "up_total": 8}, map[string]time.Duration{"down_total": 4 * time.Minute, "up_total": 0}},
	}
	for i, st := range steps {
		md, _ := Convert(counterFamilies(t, st.values), opts(st.p, t0.Add(st.at)))
		for name, want := range st.want {
			got := metricByName(t, md, name).Sum().DataPoints().At(0).StartTimestamp().AsTime()
			if !got.Equal(t0.Add(want)) {
				t.Errorf("step %d, %s: start %s, want %s", i, name, got, t0.Add(want))
			}
		}
	}
}
