package otlp

import (
	"testing"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/otlptranslator"

	"github.com/amp-exporter/amp-exporter/collector"
)

// Every family the exporter exposes, sent with its name and Unit, comes
// back from Prometheus's own OTLP name translation under each of its
// strategies with the name a scrape shows: dashboards and rules work on
// pushed series unchanged. (The strategies without suffixes keep names
// as they are; the suffix strategies would append a unit the name does
// not already hold, or move _total.)
func TestPrometheusGivesBackTheScrapedNames(t *testing.T) {
	strategies := []otlptranslator.TranslationStrategyOption{
		otlptranslator.UnderscoreEscapingWithSuffixes, // Prometheus 3's default
		otlptranslator.UnderscoreEscapingWithoutSuffixes,
		otlptranslator.NoUTF8EscapingWithSuffixes,
		otlptranslator.NoTranslation,
	}
	if len(collector.Metrics) < 20 {
		t.Fatalf("only %d families in the table", len(collector.Metrics))
	}
	for _, m := range collector.Metrics {
		typ, ttyp := dto.MetricType_GAUGE, otlptranslator.MetricType(otlptranslator.MetricTypeGauge)
		switch m.Type {
		case collector.Counter:
			typ, ttyp = dto.MetricType_COUNTER, otlptranslator.MetricTypeMonotonicCounter
		case collector.Histogram:
			typ, ttyp = dto.MetricType_HISTOGRAM, otlptranslator.MetricTypeHistogram
		}
		unit := Unit(m.Name, typ)
		for _, s := range strategies {
			namer := otlptranslator.NewMetricNamer("", s)
			got, err := namer.Build(otlptranslator.Metric{Name: m.Name, Unit: unit, Type: ttyp})
			if err != nil || got != m.Name {
				t.Errorf("%s (unit %q) comes back under %s as %q (%v)", m.Name, unit, s, got, err)
			}
		}
		for _, l := range m.AllLabels() {
			ln := otlptranslator.LabelNamer{}
			if got, err := ln.Build(l); err != nil || got != l {
				t.Errorf("%s: label %s comes back as %q (%v)", m.Name, l, got, err)
			}
		}
	}
}

// The units chosen, and why a bare USD is not one of them.
func TestUnit(t *testing.T) {
	for _, tc := range []struct {
		name string
		typ  dto.MetricType
		want string
	}{
		{"amp_tokens_total", dto.MetricType_COUNTER, "{token}"},
		{"amp_unpriced_tokens_total", dto.MetricType_COUNTER, "{token}"},
		{"amp_cost_usd_total", dto.MetricType_COUNTER, "{USD}"},
		{"amp_entitlement_limit_usd", dto.MetricType_GAUGE, "{USD}"},
		{"amp_exchange_duration_seconds", dto.MetricType_HISTOGRAM, "s"},
		{"amp_thread_last_activity_timestamp_seconds", dto.MetricType_GAUGE, "s"},
		{"amp_server_response_bytes_total", dto.MetricType_COUNTER, "By"},
		{"amp_entitlement_used_ratio", dto.MetricType_GAUGE, "1"},
		{"amp_exporter_state_bytes_written_total", dto.MetricType_COUNTER, ""},
		{"amp_context_window_utilization_ratio", dto.MetricType_HISTOGRAM, ""},
		{"amp_messages_total", dto.MetricType_COUNTER, ""},
		{"amp_cost_usdx_total", dto.MetricType_COUNTER, ""},
	} {
		if got := Unit(tc.name, tc.typ); got != tc.want {
			t.Errorf("Unit(%s) = %q, want %q", tc.name, got, tc.want)
		}
	}
	namer := otlptranslator.NewMetricNamer("", otlptranslator.UnderscoreEscapingWithSuffixes)
	got, _ := namer.Build(otlptranslator.Metric{Name: "amp_cost_usd_total", Unit: "USD", Type: otlptranslator.MetricTypeMonotonicCounter})
	if got != "amp_cost_usd_USD_total" {
		t.Errorf("with unit USD the default strategy gives %q; the choice of {USD} and docs/otlp.md say amp_cost_usd_USD_total", got)
	}
}
