package otlp

import (
	"fmt"
	"testing"
	"time"

	"github.com/klauspost/compress/snappy"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/amp-exporter/amp-exporter/remotewrite"
	"github.com/amp-exporter/amp-exporter/store"
)

// benchRegistry is a registry shaped like a busy exporter's: token and
// cost counters by repository, model and token type, and a latency
// histogram by repository and model.
func benchRegistry(b *testing.B, repos int) *prometheus.Registry {
	b.Helper()
	reg := prometheus.NewRegistry()
	tokens := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "amp_tokens_total", Help: "Tokens."}, []string{"source", "repository", "model", "token_type"})
	cost := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "amp_cost_usd_total", Help: "Cost."}, []string{"source", "repository", "model"})
	dur := prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "amp_exchange_duration_seconds", Help: "Exchange time.",
		Buckets: []float64{1, 2.5, 5, 10, 20, 30, 60, 120, 300, 600}}, []string{"source", "repository", "model"})
	reg.MustRegister(tokens, cost, dur)
	models := []string{"claude-opus-4-6", "claude-sonnet-4-5", "gpt-5", "gemini-3-pro", "claude-haiku-4-5"}
	for r := range repos {
		repo := fmt.Sprintf("github.com/team/repo-%d", r)
		for i, m := range models {
			for _, tt := range []string{"input", "output", "cache_read", "cache_creation"} {
				tokens.WithLabelValues("threads", repo, m, tt).Add(float64(1000 * (r + i + 1)))
			}
			cost.WithLabelValues("threads", repo, m).Add(float64(r+i) * 0.37)
			for k := range 20 {
				dur.WithLabelValues("threads", repo, m).Observe(float64(k * 7 % 200))
			}
		}
	}
	return reg
}

// BenchmarkPush is the work of one push without the request, OTLP beside
// remote-write 1.0 on the same gathered families (gathering included in
// both): compare their ns/op in one run, e.g.
//
//	go test -run '^$' -bench BenchmarkPush -benchtime 20x ./otlp/
func BenchmarkPush(b *testing.B) {
	reg := benchRegistry(b, 200) // 1,000 series a family: 4,000 + 1,000 counters, 1,000 histograms
	now := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	b.Run("otlp", func(b *testing.B) {
		starts := store.NewSeriesStarts()
		var size int
		for range b.N {
			body, _, err := Encode(reg, ConvertOptions{Resource: map[string]string{"service.name": "amp-exporter"}, Starts: starts, Now: now})
			if err != nil {
				b.Fatal(err)
			}
			size = len(body)
		}
		b.ReportMetric(float64(size), "body-bytes")
	})
	b.Run("remotewrite", func(b *testing.B) {
		var size int
		for range b.N {
			mfs, err := reg.Gather()
			if err != nil {
				b.Fatal(err)
			}
			body := snappy.Encode(nil, remotewrite.Marshal(remotewrite.Convert(mfs, map[string]string{"user": "alice"}), now.UnixMilli()))
			size = len(body)
		}
		b.ReportMetric(float64(size), "body-bytes")
	})
}
