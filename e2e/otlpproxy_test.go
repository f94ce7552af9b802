//go:build e2e

package e2e

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/pdata/pmetric/pmetricotlp"
)

// otlpPoint is one data point of a pushed request, as the proxy decoded it.
type otlpPoint struct {
	metric      string
	kind        pmetric.MetricType
	monotonic   bool // sums only
	temporality pmetric.AggregationTemporality
	series      string // metric name and sorted attributes
	start, ts   time.Time
	value       float64 // sums and gauges; the count for histograms
}

// otlpRequest is one request the proxy received.
type otlpRequest struct {
	received time.Time
	status   int           // what the exporter was answered
	refused  bool          // answered by the proxy, not forwarded
	retry    time.Duration // the Retry-After it was answered with
	resource map[string]string
	points   []otlpPoint
}

// refusal is the proxy's answer to a request it does not forward.
type refusal struct {
	status     int
	retryAfter time.Duration
}

// otlpProxy stands in front of a receiver: it decodes and records every
// OTLP/HTTP metrics request, then forwards it unchanged or, while refusals
// are queued, answers with the next one instead.
type otlpProxy struct {
	t      *testing.T
	target string // the receiver's OTLP metrics URL
	srv    *httptest.Server

	mu       sync.Mutex
	requests []otlpRequest
	refuse   []refusal
}

func startOTLPProxy(t *testing.T, target string) *otlpProxy {
	t.Helper()
	p := &otlpProxy{t: t, target: target}
	p.srv = httptest.NewServer(http.HandlerFunc(p.serve))
	t.Cleanup(p.srv.Close)
	return p
}

// url is the endpoint the exporter is configured with.
func (p *otlpProxy) url() string { return p.srv.URL + "/api/v1/otlp/v1/metrics" }

// refuseNext queues answers for the next requests, in order.
func (p *otlpProxy) refuseNext(rs ...refusal) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.refuse = append(p.refuse, rs...)
}

// pendingRefusals is how many queued refusals have not been answered yet.
func (p *otlpProxy) pendingRefusals() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.refuse)
}

// log returns a copy of the requests received so far.
func (p *otlpProxy) log() []otlpRequest {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]otlpRequest(nil), p.requests...)
}

func (p *otlpProxy) serve(w http.ResponseWriter, r *http.Request) {
	now := time.Now()
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	req := otlpRequest{received: now}
	if err := decodeOTLP(r.Header.Get("Content-Encoding"), body, &req); err != nil {
		p.t.Errorf("the proxy could not decode a push (Content-Type %q): %v", r.Header.Get("Content-Type"), err)
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}

	p.mu.Lock()
	if len(p.refuse) > 0 {
		rf := p.refuse[0]
		p.refuse = p.refuse[1:]
		req.status, req.refused, req.retry = rf.status, true, rf.retryAfter
		p.requests = append(p.requests, req)
		p.mu.Unlock()
		w.Header().Set("Retry-After", fmt.Sprint(int(rf.retryAfter/time.Second)))
		http.Error(w, "refused by the test proxy", rf.status)
		return
	}
	p.mu.Unlock()

	fwd, err := http.NewRequest(http.MethodPost, p.target, bytes.NewReader(body))
	if err != nil {
		p.t.Errorf("proxy: %v", err)
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	for _, h := range []string{"Content-Type", "Content-Encoding", "User-Agent"} {
		if v := r.Header.Get(h); v != "" {
			fwd.Header.Set(h, v)
		}
	}
	resp, err := httpClient.Do(fwd)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		req.status = http.StatusBadGateway
		p.record(req)
		return
	}
	defer resp.Body.Close()
	answer, _ := io.ReadAll(resp.Body)
	req.status = resp.StatusCode
	if resp.StatusCode/100 != 2 {
		p.t.Errorf("Prometheus refused a push: HTTP %d: %s", resp.StatusCode, answer)
	}
	p.record(req)
	for _, h := range []string{"Content-Type", "Retry-After"} {
		if v := resp.Header.Get(h); v != "" {
			w.Header().Set(h, v)
		}
	}
	w.WriteHeader(resp.StatusCode)
	_, _ = w.Write(answer)
}

func (p *otlpProxy) record(req otlpRequest) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.requests = append(p.requests, req)
}

// decodeOTLP reads an ExportMetricsServiceRequest (protobuf, gzip or not)
// into req's resource and points.
func decodeOTLP(encoding string, body []byte, req *otlpRequest) error {
	switch encoding {
	case "gzip":
		zr, err := gzip.NewReader(bytes.NewReader(body))
		if err != nil {
			return fmt.Errorf("gzip: %w", err)
		}
		if body, err = io.ReadAll(zr); err != nil {
			return fmt.Errorf("gzip: %w", err)
		}
	case "", "identity":
	default:
		return fmt.Errorf("unexpected Content-Encoding %q", encoding)
	}
	er := pmetricotlp.NewExportRequest()
	if err := er.UnmarshalProto(body); err != nil {
		return fmt.Errorf("protobuf: %w", err)
	}
	rms := er.Metrics().ResourceMetrics()
	for i := range rms.Len() {
		rm := rms.At(i)
		req.resource = attrMap(rm.Resource().Attributes())
		sms := rm.ScopeMetrics()
		for j := range sms.Len() {
			ms := sms.At(j).Metrics()
			for k := range ms.Len() {
				req.points = append(req.points, metricPoints(ms.At(k))...)
			}
		}
	}
	return nil
}

func metricPoints(m pmetric.Metric) []otlpPoint {
	var out []otlpPoint
	add := func(attrs pcommon.Map, start, ts pcommon.Timestamp, v float64, monotonic bool, temp pmetric.AggregationTemporality) {
		out = append(out, otlpPoint{
			metric: m.Name(), kind: m.Type(), monotonic: monotonic, temporality: temp,
			series: m.Name() + seriesKey(attrMap(attrs)),
			start:  start.AsTime(), ts: ts.AsTime(), value: v,
		})
	}
	number := func(dp pmetric.NumberDataPoint) float64 {
		if dp.ValueType() == pmetric.NumberDataPointValueTypeInt {
			return float64(dp.IntValue())
		}
		return dp.DoubleValue()
	}
	switch m.Type() {
	case pmetric.MetricTypeSum:
		s := m.Sum()
		for i := range s.DataPoints().Len() {
			dp := s.DataPoints().At(i)
			add(dp.Attributes(), dp.StartTimestamp(), dp.Timestamp(), number(dp), s.IsMonotonic(), s.AggregationTemporality())
		}
	case pmetric.MetricTypeGauge:
		g := m.Gauge()
		for i := range g.DataPoints().Len() {
			dp := g.DataPoints().At(i)
			add(dp.Attributes(), dp.StartTimestamp(), dp.Timestamp(), number(dp), false, pmetric.AggregationTemporalityUnspecified)
		}
	case pmetric.MetricTypeHistogram:
		h := m.Histogram()
		for i := range h.DataPoints().Len() {
			dp := h.DataPoints().At(i)
			add(dp.Attributes(), dp.StartTimestamp(), dp.Timestamp(), float64(dp.Count()), false, h.AggregationTemporality())
		}
	case pmetric.MetricTypeSummary:
		s := m.Summary()
		for i := range s.DataPoints().Len() {
			dp := s.DataPoints().At(i)
			add(dp.Attributes(), dp.StartTimestamp(), dp.Timestamp(), float64(dp.Count()), false, pmetric.AggregationTemporalityCumulative)
		}
	default:
		out = append(out, otlpPoint{metric: m.Name(), kind: m.Type(), series: m.Name()})
	}
	return out
}

func attrMap(m pcommon.Map) map[string]string {
	out := make(map[string]string, m.Len())
	for k, v := range m.All() {
		out[k] = v.AsString()
	}
	return out
}

// seriesKey renders labels sorted, {k="v",…}, for messages and map keys.
func seriesKey(ls map[string]string) string {
	keys := make([]string, 0, len(ls))
	for k := range ls {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	b.WriteByte('{')
	for i, k := range keys {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, "%s=%q", k, ls[k])
	}
	b.WriteByte('}')
	return b.String()
}
