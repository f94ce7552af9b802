package otlp

import (
	"bytes"
	"fmt"

	"github.com/klauspost/compress/gzip"
	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/collector/pdata/pmetric"
)

// Headers of an OTLP/HTTP protobuf request.
const (
	ContentType = "application/x-protobuf"
	Encoding    = "gzip"
)

// Marshal encodes md as an ExportMetricsServiceRequest, gzip-compressed:
// the body of an OTLP/HTTP push. Fastest compression: a push is sent once
// and the receiver is usually near, so CPU counts more than bytes.
//
// pmetric's MetricsData encoder writes it: MetricsData and
// ExportMetricsServiceRequest are the same message on the wire (field 1,
// repeated ResourceMetrics), and pmetricotlp, which names the request,
// links gRPC into the binary (2.6 MB of the 4.6 MB the push adds) for a
// protocol the exporter does not speak. The tests decode every push with
// pmetricotlp.
func Marshal(md pmetric.Metrics) ([]byte, error) {
	raw, err := (&pmetric.ProtoMarshaler{}).MarshalMetrics(md)
	if err != nil {
		return nil, fmt.Errorf("encoding the OTLP request: %w", err)
	}
	var buf bytes.Buffer
	buf.Grow(len(raw) / 4)
	zw, err := gzip.NewWriterLevel(&buf, gzip.BestSpeed)
	if err != nil {
		return nil, fmt.Errorf("compressing the OTLP request: %w", err)
	}
	if _, err := zw.Write(raw); err != nil {
		return nil, fmt.Errorf("compressing the OTLP request: %w", err)
	}
	if err := zw.Close(); err != nil {
		return nil, fmt.Errorf("compressing the OTLP request: %w", err)
	}
	return buf.Bytes(), nil
}

// Encode gathers g and returns the body a push sends (Convert, then
// Marshal) and its number of data points: all of a push's work but the
// request, for benchmarks beside remote-write's. A gather error that still
// returned families is returned with the body built from them.
func Encode(g prometheus.Gatherer, o ConvertOptions) ([]byte, int, error) {
	mfs, gerr := g.Gather()
	if gerr != nil && len(mfs) == 0 {
		return nil, 0, fmt.Errorf("gathering: %w", gerr)
	}
	md, n := Convert(mfs, o)
	body, err := Marshal(md)
	if err != nil {
		return nil, 0, err
	}
	if gerr != nil {
		return body, n, fmt.Errorf("gathering: %w", gerr)
	}
	return body, n, nil
}
