package landing

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/exporter-toolkit/web"
)

func f(v float64) *float64 { return &v }

func testRegistry(t *testing.T) *prometheus.Registry {
	t.Helper()
	reg := prometheus.NewPedanticRegistry()
	tokens := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "amp_tokens_total", Help: "t"}, []string{"source", "token_type"})
	tokens.WithLabelValues("threads", "input").Add(1000)
	tokens.WithLabelValues("threads", "output").Add(234)
	tokens.WithLabelValues("stream", "input").Add(5)
	last := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "amp_exporter_source_last_change_timestamp_seconds", Help: "l"}, []string{"source"})
	last.WithLabelValues("threads").Set(1700000000.5)
	reg.MustRegister(tokens, last)
	return reg
}

func TestMetrics(t *testing.T) {
	m := Gather(testRegistry(t))
	tests := []struct {
		name   string
		match  map[string]string
		want   float64
		wantOK bool
	}{
		{"amp_tokens_total", map[string]string{"source": "threads"}, 1234, true},
		{"amp_tokens_total", map[string]string{"source": "stream"}, 5, true},
		{"amp_tokens_total", nil, 1239, true},
		{"amp_tokens_total", map[string]string{"source": "server"}, 0, false},
		{"amp_tokens_total", map[string]string{"no_such_label": "x"}, 0, false},
		{"amp_no_such_family", nil, 0, false},
	}
	for _, tt := range tests {
		got, ok := m.Sum(tt.name, tt.match)
		if got != tt.want || ok != tt.wantOK {
			t.Errorf("Sum(%s, %v) = %v, %v; want %v, %v", tt.name, tt.match, got, ok, tt.want, tt.wantOK)
		}
		if p := m.SumPtr(tt.name, tt.match); (p != nil) != tt.wantOK {
			t.Errorf("SumPtr(%s, %v) = %v", tt.name, tt.match, p)
		}
	}
	if got := m.Time("amp_exporter_source_last_change_timestamp_seconds", map[string]string{"source": "threads"}); !got.Equal(time.UnixMilli(1700000000500)) {
		t.Errorf("Time = %v", got)
	}
	if got := m.Time("amp_exporter_source_last_change_timestamp_seconds", map[string]string{"source": "stream"}); !got.IsZero() {
		t.Errorf("Time of a missing series = %v, want zero", got)
	}
}

func get(t *testing.T, h http.Handler, path string) (int, string) {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
	body, _ := io.ReadAll(rec.Result().Body)
	return rec.Code, string(body)
}

func TestPage(t *testing.T) {
	now := time.Date(2026, 12, 1, 8, 0, 0, 0, time.UTC)
	threads := func(m Metrics) []SourceStatus {
		return []SourceStatus{{
			Source:     "Thread files",
			Configured: []Setting{{Value: "/home/u/threads"}, {Value: "/gone", Problem: "missing"}},
			State:      "watching",
			LastSync:   m.Time("amp_exporter_source_last_change_timestamp_seconds", map[string]string{"source": "threads"}),
			Counted:    Counts{Threads: f(12), Tokens: m.SumPtr("amp_tokens_total", map[string]string{"source": "threads"}), EstimatedUSD: f(1234.5)},
		}}
	}
	server := func(Metrics) []SourceStatus {
		return []SourceStatus{{Source: "Amp server <b>", State: NotConfigured, Note: "log in"}}
	}
	p, err := New(web.LandingConfig{
		Name: "amp-exporter", Version: "v1", Profiling: "false",
		Links: []web.LandingLinks{{Address: "/metrics", Text: "Metrics"}},
	}, testRegistry(t), func() time.Time { return now }, server, threads)
	if err != nil {
		t.Fatal(err)
	}
	code, body := get(t, p, "/")
	if code != http.StatusOK {
		t.Fatalf("GET /: %d", code)
	}
	for _, want := range []string{
		`<a href="/metrics">Metrics</a>`, // the toolkit's links stay
		"Version: v1",
		"Counted so far: <strong>1,234 tokens</strong>, $1,234.50 estimated.",
		"<td>Amp server &lt;b&gt;</td>", // escaped
		`<li>/gone <span class="attention">(missing)</span></li>`,
		`<td class="num">12</td>`,
		`<td class="num">1,234</td>`,
		`<td class="num">$1,234.50</td>`,
		"2023-11-14 22:13:20 UTC",
		"<div class=\"note\">log in</div>",
	} {
		if !strings.Contains(body, want) {
			t.Errorf("page lacks %q:\n%s", want, body)
		}
	}
	if strings.Index(body, "Amp server") > strings.Index(body, "Thread files") {
		t.Error("rows not in provider order")
	}
	if strings.Contains(strings.ToLower(body), "<script") {
		t.Error("page has JavaScript")
	}
	if code, _ := get(t, p, "/nope"); code != http.StatusNotFound {
		t.Errorf("GET /nope: %d, want 404", code)
	}
}

func TestNothingCounted(t *testing.T) {
	missing := func(Metrics) []SourceStatus {
		return []SourceStatus{{Source: "Thread files", State: "missing", Attention: true}, {Source: "Amp server", State: NotConfigured}}
	}
	p, err := New(web.LandingConfig{Name: "x"}, nil, nil, missing)
	if err != nil {
		t.Fatal(err)
	}
	_, body := get(t, p, "/")
	if !strings.Contains(body, "Nothing counted yet") || !strings.Contains(body, "Needs attention: Thread files: missing.") {
		t.Errorf("page does not say nothing is counted:\n%s", body)
	}
}

func TestFormat(t *testing.T) {
	for in, want := range map[float64]string{0: "0", 999: "999", 1000: "1,000", 1234567: "1,234,567", -1234: "-1,234"} {
		if got := formatNumber(&in); got != want {
			t.Errorf("formatNumber(%v) = %q, want %q", in, got, want)
		}
	}
	if got := formatUSD(f(1234567.891)); got != "$1,234,567.89" {
		t.Errorf("formatUSD = %q", got)
	}
	if formatNumber(nil) != "—" || formatUSD(nil) != "—" {
		t.Error("nil is not a dash")
	}
	now := time.Date(2026, 1, 1, 0, 1, 0, 0, time.UTC)
	if got := formatWhen(now.Add(-90*time.Second), now); got != "2025-12-31 23:59:30 UTC (1m30s ago)" {
		t.Errorf("formatWhen = %q", got)
	}
	if formatWhen(time.Time{}, now) != "never" {
		t.Error("zero time is not never")
	}
}
