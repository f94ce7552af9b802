package remotewrite

import (
	"bytes"
	"fmt"
	"net/http"

	"github.com/klauspost/compress/snappy"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/descriptorpb"
	"google.golang.org/protobuf/types/dynamicpb"
)

// writeRequestDesc is remote-write 1.0's prometheus.WriteRequest as the
// spec's .proto files declare it (the fields a 1.0 sender may use), so the
// protobuf library's own decoder checks what Marshal writes.
var writeRequestDesc = func() protoreflect.MessageDescriptor {
	rep := descriptorpb.FieldDescriptorProto_LABEL_REPEATED.Enum()
	opt := descriptorpb.FieldDescriptorProto_LABEL_OPTIONAL.Enum()
	field := func(name string, num int32, label *descriptorpb.FieldDescriptorProto_Label, typ descriptorpb.FieldDescriptorProto_Type, msg string) *descriptorpb.FieldDescriptorProto {
		f := &descriptorpb.FieldDescriptorProto{Name: proto.String(name), Number: proto.Int32(num), Label: label, Type: typ.Enum()}
		if msg != "" {
			f.TypeName = proto.String(".prometheus." + msg)
		}
		return f
	}
	const (
		tMsg    = descriptorpb.FieldDescriptorProto_TYPE_MESSAGE
		tString = descriptorpb.FieldDescriptorProto_TYPE_STRING
		tDouble = descriptorpb.FieldDescriptorProto_TYPE_DOUBLE
		tInt64  = descriptorpb.FieldDescriptorProto_TYPE_INT64
	)
	fdp := &descriptorpb.FileDescriptorProto{
		Name: proto.String("remote.proto"), Package: proto.String("prometheus"), Syntax: proto.String("proto3"),
		MessageType: []*descriptorpb.DescriptorProto{
			{Name: proto.String("WriteRequest"), Field: []*descriptorpb.FieldDescriptorProto{field("timeseries", 1, rep, tMsg, "TimeSeries")}},
			{Name: proto.String("TimeSeries"), Field: []*descriptorpb.FieldDescriptorProto{
				field("labels", 1, rep, tMsg, "Label"), field("samples", 2, rep, tMsg, "Sample")}},
			{Name: proto.String("Label"), Field: []*descriptorpb.FieldDescriptorProto{
				field("name", 1, opt, tString, ""), field("value", 2, opt, tString, "")}},
			{Name: proto.String("Sample"), Field: []*descriptorpb.FieldDescriptorProto{
				field("value", 1, opt, tDouble, ""), field("timestamp", 2, opt, tInt64, "")}},
		},
	}
	fd, err := protodesc.NewFile(fdp, nil)
	if err != nil {
		panic(err)
	}
	return fd.Messages().ByName("WriteRequest")
}()

// decodedSample is one sample of a decoded request.
type decodedSample struct {
	Labels []Label
	Value  float64
	TS     int64
}

// decodeRequest checks an HTTP request against the 1.0 spec and decodes
// its body with the reference decoder.
func decodeRequest(r *http.Request, body []byte) ([]decodedSample, error) {
	for k, want := range map[string]string{"Content-Encoding": "snappy", "Content-Type": "application/x-protobuf", VersionKey: "0.1.0"} {
		if got := r.Header.Get(k); got != want {
			return nil, fmt.Errorf("header %s = %q, want %q", k, got, want)
		}
	}
	if r.Header.Get("User-Agent") == "" {
		return nil, fmt.Errorf("no User-Agent")
	}
	return decodeBody(body)
}

func decodeBody(body []byte) ([]decodedSample, error) {
	// The block format starts with the uncompressed length as a varint;
	// the framed (stream) format starts with a 0xff chunk instead.
	if bytes.HasPrefix(body, []byte("\xff\x06\x00\x00sNaPpY")) {
		return nil, fmt.Errorf("snappy framed format, the spec wants the block format")
	}
	raw, err := snappy.Decode(nil, body)
	if err != nil {
		return nil, fmt.Errorf("snappy block: %w", err)
	}
	if n, l := protowire.ConsumeVarint(body); l <= 0 || int(n) != len(raw) {
		return nil, fmt.Errorf("snappy block header %d, want the decoded length %d", n, len(raw))
	}
	msg := dynamicpb.NewMessage(writeRequestDesc)
	if err := proto.Unmarshal(raw, msg); err != nil {
		return nil, fmt.Errorf("protobuf: %w", err)
	}
	if len(msg.GetUnknown()) > 0 {
		return nil, fmt.Errorf("unknown fields in WriteRequest")
	}
	var out []decodedSample
	tsList := msg.Get(writeRequestDesc.Fields().ByName("timeseries")).List()
	for i := 0; i < tsList.Len(); i++ {
		ts := tsList.Get(i).Message()
		if len(ts.GetUnknown()) > 0 {
			return nil, fmt.Errorf("unknown fields in TimeSeries")
		}
		fields := ts.Descriptor().Fields()
		var labels []Label
		ll := ts.Get(fields.ByName("labels")).List()
		for j := 0; j < ll.Len(); j++ {
			l := ll.Get(j).Message()
			lf := l.Descriptor().Fields()
			labels = append(labels, Label{l.Get(lf.ByName("name")).String(), l.Get(lf.ByName("value")).String()})
		}
		sl := ts.Get(fields.ByName("samples")).List()
		if sl.Len() != 1 {
			return nil, fmt.Errorf("series %v has %d samples, want 1", labels, sl.Len())
		}
		s := sl.Get(0).Message()
		sf := s.Descriptor().Fields()
		out = append(out, decodedSample{labels, s.Get(sf.ByName("value")).Float(), s.Get(sf.ByName("timestamp")).Int()})
	}
	return out, nil
}
