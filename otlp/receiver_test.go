package otlp

import (
	"compress/gzip"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/pdata/pmetric/pmetricotlp"
)

// receiver is an httptest OTLP/HTTP receiver that decodes every request
// with pmetricotlp and answers as the test scripts: respond returns the
// status, headers and body for the n-th request (from 1); a nil respond
// answers 200 with an empty ExportMetricsServiceResponse.
type receiver struct {
	t       *testing.T
	srv     *httptest.Server
	respond func(n int) (int, http.Header, []byte)
	hang    chan struct{} // when set, requests block until it is closed

	mu       sync.Mutex
	requests int
	pushes   []pmetric.Metrics
	headers  []http.Header
}

func newReceiver(t *testing.T, respond func(n int) (int, http.Header, []byte)) *receiver {
	r := &receiver{t: t, respond: respond}
	r.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		md, err := decodeRequest(req)
		if err != nil {
			t.Errorf("receiver: %v", err)
		}
		r.mu.Lock()
		r.requests++
		n := r.requests
		r.pushes = append(r.pushes, md)
		r.headers = append(r.headers, req.Header.Clone())
		r.mu.Unlock()
		if r.hang != nil {
			select {
			case <-r.hang:
			case <-req.Context().Done():
			}
			return
		}
		code, h, body := http.StatusOK, http.Header(nil), []byte(nil)
		if r.respond != nil {
			code, h, body = r.respond(n)
		}
		for k, v := range h {
			w.Header()[k] = v
		}
		if w.Header().Get("Content-Type") == "" {
			w.Header().Set("Content-Type", "application/x-protobuf")
		}
		w.WriteHeader(code)
		_, _ = w.Write(body)
	}))
	t.Cleanup(r.srv.Close)
	return r
}

// decodeRequest checks the headers an OTLP/HTTP receiver requires and
// decodes the body as an ExportMetricsServiceRequest.
func decodeRequest(req *http.Request) (pmetric.Metrics, error) {
	if req.Method != http.MethodPost || req.Header.Get("Content-Type") != "application/x-protobuf" || req.Header.Get("Content-Encoding") != "gzip" {
		return pmetric.NewMetrics(), &headerError{req.Method, req.Header.Get("Content-Type"), req.Header.Get("Content-Encoding")}
	}
	zr, err := gzip.NewReader(req.Body)
	if err != nil {
		return pmetric.NewMetrics(), err
	}
	raw, err := io.ReadAll(zr)
	if err != nil {
		return pmetric.NewMetrics(), err
	}
	er := pmetricotlp.NewExportRequest()
	if err := er.UnmarshalProto(raw); err != nil {
		return pmetric.NewMetrics(), err
	}
	return er.Metrics(), nil
}

type headerError struct{ method, ct, ce string }

func (e *headerError) Error() string {
	return "bad request: " + e.method + " Content-Type " + e.ct + " Content-Encoding " + e.ce
}

func (r *receiver) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.requests
}

// last is the decoded body of the latest request.
func (r *receiver) last() pmetric.Metrics {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.pushes) == 0 {
		r.t.Fatal("no push received")
	}
	return r.pushes[len(r.pushes)-1]
}

func (r *receiver) lastHeader() http.Header {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.headers[len(r.headers)-1]
}

// point is one number data point of a decoded push, found by metric name.
type point struct {
	value       float64
	start, time int64 // unix ns
	attrs       map[string]any
}

func points(md pmetric.Metrics, name string) []point {
	var out []point
	rms := md.ResourceMetrics()
	for i := 0; i < rms.Len(); i++ {
		sms := rms.At(i).ScopeMetrics()
		for j := 0; j < sms.Len(); j++ {
			ms := sms.At(j).Metrics()
			for k := 0; k < ms.Len(); k++ {
				m := ms.At(k)
				if m.Name() != name {
					continue
				}
				var dps pmetric.NumberDataPointSlice
				switch m.Type() {
				case pmetric.MetricTypeSum:
					dps = m.Sum().DataPoints()
				case pmetric.MetricTypeGauge:
					dps = m.Gauge().DataPoints()
				default:
					continue
				}
				for l := 0; l < dps.Len(); l++ {
					dp := dps.At(l)
					out = append(out, point{dp.DoubleValue(), int64(dp.StartTimestamp()), int64(dp.Timestamp()), dp.Attributes().AsRaw()})
				}
			}
		}
	}
	return out
}
