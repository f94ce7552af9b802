package remotewrite

import (
	"math"

	"google.golang.org/protobuf/encoding/protowire"
)

// Protobuf messages a receiver may be sent, as Prometheus's remote_write
// protobuf_message names them.
const (
	MessageV1 = "prometheus.WriteRequest"
	MessageV2 = "io.prometheus.write.v2.Request"
)

// Headers of a remote-write 2.0 request and response.
const (
	ContentTypeV2       = "application/x-protobuf;proto=" + MessageV2
	VersionValueV2      = "2.0.0"
	SamplesWrittenKeyV2 = "X-Prometheus-Remote-Write-Samples-Written"
)

// Field numbers of io.prometheus.write.v2 (prompb/io/prometheus/write/v2/types.proto).
const (
	v2RequestSymbols    = 4 // repeated string; symbols[0] is ""
	v2RequestTimeseries = 5 // repeated TimeSeries
	v2SeriesLabelsRefs  = 1 // repeated uint32, packed: name, value, name, value, …
	v2SeriesSamples     = 2 // repeated Sample
	v2SeriesMetadata    = 5 // Metadata
	v2SampleValue       = 1 // double
	v2SampleTimestamp   = 2 // int64 ms
	v2MetadataType      = 1 // MetricType
	v2MetadataHelpRef   = 3 // uint32
)

// MarshalV2 encodes series as an io.prometheus.write.v2.Request, every
// sample at timestampMs, with each family's type and help as metadata.
// Strings are written once, in the symbols table.
func MarshalV2(series []Series, timestampMs int64) []byte {
	symbols := []string{""}
	index := map[string]uint32{"": 0}
	ref := func(s string) uint32 {
		if i, ok := index[s]; ok {
			return i
		}
		i := uint32(len(symbols))
		symbols = append(symbols, s)
		index[s] = i
		return i
	}
	var tsBuf, ts, refs, sub []byte
	for _, s := range series {
		ts, refs = ts[:0], refs[:0]
		for _, l := range s.Labels {
			refs = protowire.AppendVarint(refs, uint64(ref(l.Name)))
			refs = protowire.AppendVarint(refs, uint64(ref(l.Value)))
		}
		ts = protowire.AppendTag(ts, v2SeriesLabelsRefs, protowire.BytesType)
		ts = protowire.AppendBytes(ts, refs)

		sub = sub[:0]
		sub = protowire.AppendTag(sub, v2SampleValue, protowire.Fixed64Type)
		sub = protowire.AppendFixed64(sub, math.Float64bits(s.Value))
		sub = protowire.AppendTag(sub, v2SampleTimestamp, protowire.VarintType)
		sub = protowire.AppendVarint(sub, uint64(timestampMs))
		ts = protowire.AppendTag(ts, v2SeriesSamples, protowire.BytesType)
		ts = protowire.AppendBytes(ts, sub)

		sub = sub[:0]
		if s.Type != TypeUnspecified {
			sub = protowire.AppendTag(sub, v2MetadataType, protowire.VarintType)
			sub = protowire.AppendVarint(sub, uint64(s.Type))
		}
		if s.Help != "" {
			sub = protowire.AppendTag(sub, v2MetadataHelpRef, protowire.VarintType)
			sub = protowire.AppendVarint(sub, uint64(ref(s.Help)))
		}
		ts = protowire.AppendTag(ts, v2SeriesMetadata, protowire.BytesType)
		ts = protowire.AppendBytes(ts, sub)

		tsBuf = protowire.AppendTag(tsBuf, v2RequestTimeseries, protowire.BytesType)
		tsBuf = protowire.AppendBytes(tsBuf, ts)
	}
	var buf []byte
	for _, sym := range symbols {
		buf = protowire.AppendTag(buf, v2RequestSymbols, protowire.BytesType)
		buf = protowire.AppendString(buf, sym)
	}
	return append(buf, tsBuf...)
}
