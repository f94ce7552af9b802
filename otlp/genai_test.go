package otlp

import (
	"fmt"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/collector/pdata/pmetric"

	"github.com/amp-exporter/amp-exporter/store"
)

func TestGenAITokenUsage(t *testing.T) {
	reg := prometheus.NewRegistry()
	tokens := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "amp_tokens_total", Help: "h"}, []string{"source", "model", "token_type", "repository"})
	reg.MustRegister(tokens)
	for _, s := range []struct {
		source, model, tt, repo string
		v                       float64
	}{
		{"threads", "claude-opus-4-6", "input", "a", 10},
		{"threads", "claude-opus-4-6", "cache_read", "a", 100},
		{"threads", "claude-opus-4-6", "cache_creation", "b", 1000},
		{"stream", "claude-opus-4-6", "output", "a", 7},
		{"threads", "claude-opus-4-6", "output", "b", 3},
		{"threads", "gpt-5", "input", "", 5},
		{"threads", "my-local-model", "output", "", 2},
	} {
		tokens.WithLabelValues(s.source, s.model, s.tt, s.repo).Add(s.v)
	}
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	starts := store.NewSeriesStarts()
	md, n := Convert(mfs, ConvertOptions{Now: t0, Starts: starts, GenAI: true})
	if n != 7+4 {
		t.Errorf("%d points, want 7 of amp_tokens_total and 4 of %s", n, GenAITokenUsage)
	}
	m := metricByName(t, md, GenAITokenUsage)
	if m.Type() != pmetric.MetricTypeSum || !m.Sum().IsMonotonic() || m.Sum().AggregationTemporality() != pmetric.AggregationTemporalityCumulative || m.Unit() != "{token}" {
		t.Fatalf("%s: %s %q", GenAITokenUsage, m.Type(), m.Unit())
	}
	got := map[string]float64{}
	dps := m.Sum().DataPoints()
	for i := 0; i < dps.Len(); i++ {
		a := dps.At(i).Attributes().AsRaw()
		got[fmt.Sprint(a)] = dps.At(i).DoubleValue()
		if !dps.At(i).StartTimestamp().AsTime().Equal(t0) {
			t.Errorf("start %s", dps.At(i).StartTimestamp().AsTime())
		}
	}
	want := map[string]float64{
		"map[gen_ai.operation.name:chat gen_ai.provider.name:anthropic gen_ai.request.model:claude-opus-4-6 gen_ai.token.type:input]":  1110,
		"map[gen_ai.operation.name:chat gen_ai.provider.name:anthropic gen_ai.request.model:claude-opus-4-6 gen_ai.token.type:output]": 10,
		"map[gen_ai.operation.name:chat gen_ai.provider.name:openai gen_ai.request.model:gpt-5 gen_ai.token.type:input]":               5,
		"map[gen_ai.operation.name:chat gen_ai.request.model:my-local-model gen_ai.token.type:output]":                                 2,
	}
	if len(got) != len(want) {
		t.Fatalf("points %v", got)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %v, want %v (all points: %v)", k, got[k], v, got)
		}
	}
	// The Prometheus names are still there, and without the switch the
	// conventions' metric is not.
	metricByName(t, md, "amp_tokens_total")
	md, _ = Convert(mfs, ConvertOptions{Now: t0})
	ms := md.ResourceMetrics().At(0).ScopeMetrics().At(0).Metrics()
	for i := 0; i < ms.Len(); i++ {
		if ms.At(i).Name() == GenAITokenUsage {
			t.Fatal("sent without genai_names")
		}
	}
	// Start times stay with later pushes.
	md, _ = Convert(mfs, ConvertOptions{Now: t0.Add(time.Minute), Starts: starts, GenAI: true})
	dps = metricByName(t, md, GenAITokenUsage).Sum().DataPoints()
	for i := 0; i < dps.Len(); i++ {
		if !dps.At(i).StartTimestamp().AsTime().Equal(t0) {
			t.Errorf("a later push starts %s, want %s", dps.At(i).StartTimestamp().AsTime(), t0)
		}
	}
}

func TestGenAIProvider(t *testing.T) {
	for model, want := range map[string]string{
		"claude-sonnet-4-5": "anthropic", "anthropic/claude-opus-4-6": "anthropic", "gpt-5": "openai", "gpt-5.1-codex": "openai",
		"o3": "openai", "o4-mini": "openai", "gemini-3-pro": "gcp.gemini", "grok-4": "x_ai", "openrouter/x/deepseek-v3": "deepseek",
		"mistral-large": "mistral_ai", "claudette": "", "o30": "", "": "", "kimi-k2": "",
	} {
		if got := genAIProvider(model); got != want {
			t.Errorf("%q: %q, want %q", model, got, want)
		}
	}
}
