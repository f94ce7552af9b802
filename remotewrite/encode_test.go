package remotewrite

import (
	"math"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/klauspost/compress/snappy"
	"github.com/prometheus/client_golang/prometheus"
)

func testRegistry(t *testing.T) *prometheus.Registry {
	t.Helper()
	reg := prometheus.NewRegistry()
	c := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "amp_tokens_total", Help: "h"}, []string{"source", "token_type"})
	c.WithLabelValues("threads", "output").Add(42)
	c.WithLabelValues("server", "input").Add(7)
	g := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "amp_threads", Help: "h"}, []string{"agent_mode", "host"})
	g.WithLabelValues("smart", "own-host").Set(3)
	g.WithLabelValues("", "").Set(1) // empty values are left out
	h := prometheus.NewHistogram(prometheus.HistogramOpts{Name: "amp_exchange_duration_seconds", Help: "h", Buckets: []float64{0.5, 10}})
	h.Observe(0.25)
	h.Observe(5)
	h.Observe(100)
	s := prometheus.NewSummary(prometheus.SummaryOpts{Name: "amp_lat", Help: "h", Objectives: map[float64]float64{0.5: 0.05}})
	s.Observe(2)
	reg.MustRegister(c, g, h, s)
	return reg
}

func TestConvertAndMarshalAgainstSpec(t *testing.T) {
	mfs, err := testRegistry(t).Gather()
	if err != nil {
		t.Fatal(err)
	}
	ext := map[string]string{"user": "alice", "host": "laptop-7"}
	series := Convert(mfs, ext)
	const ts = int64(1780000000123)
	got, err := decodeBody(snappy.Encode(nil, Marshal(series, ts)))
	if err != nil {
		t.Fatal(err)
	}
	str := func(ls []Label) string {
		parts := make([]string, len(ls))
		for i, l := range ls {
			parts[i] = l.Name + "=" + l.Value
		}
		return strings.Join(parts, ",")
	}
	want := map[string]float64{
		"__name__=amp_exchange_duration_seconds_bucket,host=laptop-7,le=0.5,user=alice":  1,
		"__name__=amp_exchange_duration_seconds_bucket,host=laptop-7,le=10,user=alice":   2,
		"__name__=amp_exchange_duration_seconds_bucket,host=laptop-7,le=+Inf,user=alice": 3,
		"__name__=amp_exchange_duration_seconds_count,host=laptop-7,user=alice":          3,
		"__name__=amp_exchange_duration_seconds_sum,host=laptop-7,user=alice":            105.25,
		"__name__=amp_lat,host=laptop-7,quantile=0.5,user=alice":                         2,
		"__name__=amp_lat_count,host=laptop-7,user=alice":                                1,
		"__name__=amp_lat_sum,host=laptop-7,user=alice":                                  2,
		// the series' own host label wins over the external one
		"__name__=amp_threads,agent_mode=smart,host=own-host,user=alice": 3,
		// an empty value is an absent label: the external one fills it
		"__name__=amp_threads,host=laptop-7,user=alice":                                       1,
		"__name__=amp_tokens_total,host=laptop-7,source=server,token_type=input,user=alice":   7,
		"__name__=amp_tokens_total,host=laptop-7,source=threads,token_type=output,user=alice": 42,
	}
	gotMap := map[string]float64{}
	for _, s := range got {
		if s.TS != ts {
			t.Errorf("%s: timestamp %d, want %d", str(s.Labels), s.TS, ts)
		}
		if !sort.SliceIsSorted(s.Labels, func(i, j int) bool { return s.Labels[i].Name < s.Labels[j].Name }) {
			t.Errorf("labels not sorted: %s", str(s.Labels))
		}
		if s.Labels[0].Name != "__name__" {
			t.Errorf("__name__ not first: %s", str(s.Labels))
		}
		k := str(s.Labels)
		if _, dup := gotMap[k]; dup {
			t.Errorf("series %s sent twice", k)
		}
		gotMap[k] = s.Value
	}
	if !reflect.DeepEqual(gotMap, want) {
		for k, v := range gotMap {
			if w, ok := want[k]; !ok || w != v {
				t.Errorf("got %s = %v (want %v, present %v)", k, v, w, ok)
			}
		}
		for k := range want {
			if _, ok := gotMap[k]; !ok {
				t.Errorf("missing %s", k)
			}
		}
	}
}

func TestMarshalSpecialValues(t *testing.T) {
	series := []Series{
		{Labels: []Label{{"__name__", "a"}}, Value: 0},
		{Labels: []Label{{"__name__", "b"}}, Value: math.Inf(1)},
		{Labels: []Label{{"__name__", "c"}, {"x", strings.Repeat("é", 300)}}, Value: -1.5e-300},
	}
	got, err := decodeBody(snappy.Encode(nil, Marshal(series, 1)))
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 3 || got[0].Value != 0 || !math.IsInf(got[1].Value, 1) || got[2].Value != -1.5e-300 || got[2].Labels[1].Value != strings.Repeat("é", 300) {
		t.Fatalf("decoded %+v", got)
	}
	if empty, err := decodeBody(snappy.Encode(nil, Marshal(nil, 1))); err != nil || len(empty) != 0 {
		t.Fatalf("empty request: %v %v", empty, err)
	}
}

func TestURLHashHidesCredentials(t *testing.T) {
	a := URLHash("https://prom.example.com/api/v1/write?token=one")
	b := URLHash("https://prom.example.com/api/v1/write?token=two")
	c := URLHash("https://other.example.com/api/v1/write")
	if a != b || a == c || len(a) != 12 || strings.Contains(a, "prom") {
		t.Fatalf("hashes %q %q %q", a, b, c)
	}
}
