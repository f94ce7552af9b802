package remotewrite

import (
	"fmt"
	"io"
	"net/http"
	"sort"
	"strings"
	"testing"

	"github.com/klauspost/compress/snappy"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/descriptorpb"
	"google.golang.org/protobuf/types/dynamicpb"
)

// requestV2Desc is io.prometheus.write.v2.Request as types.proto declares
// it (the fields a sender of float samples uses; MetricType as its
// wire-identical int32), for the protobuf library's decoder.
var requestV2Desc = func() protoreflect.MessageDescriptor {
	rep := descriptorpb.FieldDescriptorProto_LABEL_REPEATED.Enum()
	opt := descriptorpb.FieldDescriptorProto_LABEL_OPTIONAL.Enum()
	f := func(name string, num int32, label *descriptorpb.FieldDescriptorProto_Label, typ descriptorpb.FieldDescriptorProto_Type, msg string) *descriptorpb.FieldDescriptorProto {
		d := &descriptorpb.FieldDescriptorProto{Name: proto.String(name), Number: proto.Int32(num), Label: label, Type: typ.Enum()}
		if msg != "" {
			d.TypeName = proto.String(".io.prometheus.write.v2." + msg)
		}
		return d
	}
	type T = descriptorpb.FieldDescriptorProto_Type
	fdp := &descriptorpb.FileDescriptorProto{
		Name: proto.String("types.proto"), Package: proto.String("io.prometheus.write.v2"), Syntax: proto.String("proto3"),
		MessageType: []*descriptorpb.DescriptorProto{
			{Name: proto.String("Request"), Field: []*descriptorpb.FieldDescriptorProto{
				f("symbols", 4, rep, descriptorpb.FieldDescriptorProto_TYPE_STRING, ""),
				f("timeseries", 5, rep, descriptorpb.FieldDescriptorProto_TYPE_MESSAGE, "TimeSeries")}},
			{Name: proto.String("TimeSeries"), Field: []*descriptorpb.FieldDescriptorProto{
				f("labels_refs", 1, rep, descriptorpb.FieldDescriptorProto_TYPE_UINT32, ""),
				f("samples", 2, rep, descriptorpb.FieldDescriptorProto_TYPE_MESSAGE, "Sample"),
				f("metadata", 5, opt, descriptorpb.FieldDescriptorProto_TYPE_MESSAGE, "Metadata")}},
			{Name: proto.String("Sample"), Field: []*descriptorpb.FieldDescriptorProto{
				f("value", 1, opt, descriptorpb.FieldDescriptorProto_TYPE_DOUBLE, ""),
				f("timestamp", 2, opt, descriptorpb.FieldDescriptorProto_TYPE_INT64, "")}},
			{Name: proto.String("Metadata"), Field: []*descriptorpb.FieldDescriptorProto{
				f("type", 1, opt, T(descriptorpb.FieldDescriptorProto_TYPE_INT32), ""),
				f("help_ref", 3, opt, descriptorpb.FieldDescriptorProto_TYPE_UINT32, ""),
				f("unit_ref", 4, opt, descriptorpb.FieldDescriptorProto_TYPE_UINT32, "")}},
		},
	}
	fd, err := protodesc.NewFile(fdp, nil)
	if err != nil {
		panic(err)
	}
	return fd.Messages().ByName("Request")
}()

type decodedV2 struct {
	decodedSample
	Type MetricType
	Help string
}

func decodeBodyV2(body []byte) ([]decodedV2, error) {
	raw, err := snappy.Decode(nil, body)
	if err != nil {
		return nil, fmt.Errorf("snappy block: %w", err)
	}
	msg := dynamicpb.NewMessage(requestV2Desc)
	if err := proto.Unmarshal(raw, msg); err != nil {
		return nil, fmt.Errorf("protobuf: %w", err)
	}
	if len(msg.GetUnknown()) > 0 {
		return nil, fmt.Errorf("unknown fields in Request")
	}
	fields := requestV2Desc.Fields()
	symList := msg.Get(fields.ByName("symbols")).List()
	var symbols []string
	for i := 0; i < symList.Len(); i++ {
		symbols = append(symbols, symList.Get(i).String())
	}
	if len(symbols) == 0 || symbols[0] != "" {
		return nil, fmt.Errorf("symbols %q must start with the empty string", symbols)
	}
	sym := func(r uint64) (string, error) {
		if r >= uint64(len(symbols)) {
			return "", fmt.Errorf("ref %d out of %d symbols", r, len(symbols))
		}
		return symbols[r], nil
	}
	var out []decodedV2
	tsList := msg.Get(fields.ByName("timeseries")).List()
	for i := 0; i < tsList.Len(); i++ {
		ts := tsList.Get(i).Message()
		tf := ts.Descriptor().Fields()
		refs := ts.Get(tf.ByName("labels_refs")).List()
		if refs.Len()%2 != 0 {
			return nil, fmt.Errorf("odd labels_refs")
		}
		var d decodedV2
		for j := 0; j < refs.Len(); j += 2 {
			n, err := sym(refs.Get(j).Uint())
			if err != nil {
				return nil, err
			}
			v, err := sym(refs.Get(j + 1).Uint())
			if err != nil {
				return nil, err
			}
			d.Labels = append(d.Labels, Label{n, v})
		}
		sl := ts.Get(tf.ByName("samples")).List()
		if sl.Len() != 1 {
			return nil, fmt.Errorf("%d samples", sl.Len())
		}
		s := sl.Get(0).Message()
		sf := s.Descriptor().Fields()
		d.Value, d.TS = s.Get(sf.ByName("value")).Float(), s.Get(sf.ByName("timestamp")).Int()
		md := ts.Get(tf.ByName("metadata")).Message()
		mf := md.Descriptor().Fields()
		d.Type = MetricType(md.Get(mf.ByName("type")).Int())
		if d.Help, err = sym(md.Get(mf.ByName("help_ref")).Uint()); err != nil {
			return nil, err
		}
		out = append(out, d)
	}
	return out, nil
}

func TestMarshalV2AgainstSpec(t *testing.T) {
	mfs, err := testRegistry(t).Gather()
	if err != nil {
		t.Fatal(err)
	}
	series := Convert(mfs, map[string]string{"user": "alice", "host": "laptop-7"})
	got, err := decodeBodyV2(snappy.Encode(nil, MarshalV2(series, 42)))
	if err != nil {
		t.Fatal(err)
	}
	// The same series and values as 1.0.
	v1, err := decodeBody(snappy.Encode(nil, Marshal(series, 42)))
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(v1) || len(got) != 12 {
		t.Fatalf("%d series in 2.0, %d in 1.0", len(got), len(v1))
	}
	types := map[string]MetricType{}
	for i, g := range got {
		if fmt.Sprint(g.decodedSample) != fmt.Sprint(v1[i]) {
			t.Errorf("2.0 %v != 1.0 %v", g.decodedSample, v1[i])
		}
		if !sort.SliceIsSorted(g.Labels, func(a, b int) bool { return g.Labels[a].Name < g.Labels[b].Name }) {
			t.Errorf("labels not sorted: %v", g.Labels)
		}
		if g.Help != "h" {
			t.Errorf("%v: help %q", g.Labels, g.Help)
		}
		types[g.Labels[0].Value] = g.Type
	}
	for name, want := range map[string]MetricType{
		"amp_tokens_total": TypeCounter, "amp_threads": TypeGauge, "amp_lat": TypeSummary,
		"amp_exchange_duration_seconds_bucket": TypeHistogram, "amp_exchange_duration_seconds_count": TypeHistogram,
	} {
		if types[name] != want {
			t.Errorf("%s: type %d, want %d", name, types[name], want)
		}
	}
}

// v2Receiver answers like a Prometheus 3 receiver that accepts both
// messages: 2.0 with the written-samples header.
func v2Handler(t *testing.T, got *[]string, v2 func(w http.ResponseWriter, n int)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		ct := r.Header.Get("Content-Type")
		*got = append(*got, ct+" "+r.Header.Get(VersionKey))
		if strings.Contains(ct, MessageV2) {
			samples, err := decodeBodyV2(body)
			if err != nil {
				t.Errorf("2.0 body: %v", err)
			}
			v2(w, len(samples))
			return
		}
		if _, err := decodeRequest(r, body); err != nil {
			t.Errorf("1.0 request: %v", err)
		}
		w.WriteHeader(http.StatusNoContent)
	}
}

func TestV2NegotiatesAndFallsBack(t *testing.T) {
	for _, tc := range []struct {
		name    string
		v2      func(w http.ResponseWriter, n int)
		want    []string // content types and versions of the requests, over two pushes
		failed  float64
		written float64
	}{
		{"2.0 accepted", func(w http.ResponseWriter, n int) {
			w.Header().Set(SamplesWrittenKeyV2, fmt.Sprint(n))
			w.WriteHeader(http.StatusNoContent)
		}, []string{ContentTypeV2 + " 2.0.0", ContentTypeV2 + " 2.0.0"}, 0, 2},
		{"2.0 refused with 415", func(w http.ResponseWriter, n int) {
			w.WriteHeader(http.StatusUnsupportedMediaType)
		}, []string{ContentTypeV2 + " 2.0.0", ContentType + " 0.1.0", ContentType + " 0.1.0"}, 0, 2},
		{"a 1.0 receiver that ignores the Content-Type", func(w http.ResponseWriter, n int) {
			w.WriteHeader(http.StatusNoContent) // decoded as an empty 1.0 request: nothing written
		}, []string{ContentTypeV2 + " 2.0.0", ContentType + " 0.1.0", ContentType + " 0.1.0"}, 0, 2},
		{"2.0 partly written", func(w http.ResponseWriter, n int) {
			w.Header().Set(SamplesWrittenKeyV2, "0")
			w.WriteHeader(http.StatusOK)
		}, []string{ContentTypeV2 + " 2.0.0", ContentTypeV2 + " 2.0.0"}, 2, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			rcv := newReceiver(t, nil)
			rcv.srv.Config.Handler = v2Handler(t, &got, tc.v2)
			f := newFixture(t, rcv.srv.URL, func(o *Options) { o.Message = MessageV2 })
			for range 2 {
				f.push(t)
			}
			if strings.Join(got, "|") != strings.Join(tc.want, "|") {
				t.Errorf("requests\n %v\nwant\n %v", got, tc.want)
			}
			if f.samples(ResultSent) != tc.written || f.samples(ResultFailed) != tc.failed {
				t.Errorf("sent %v failed %v, want %v %v", f.samples(ResultSent), f.samples(ResultFailed), tc.written, tc.failed)
			}
		})
	}
}
