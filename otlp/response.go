package otlp

import (
	"encoding/json"
	"fmt"
	"mime"
	"strings"

	"go.opentelemetry.io/collector/pdata/pmetric/pmetricotlp"
	"google.golang.org/protobuf/encoding/protowire"
)

// maxMessage bounds what a receiver's message contributes to a log line.
const maxMessage = 512

// PartialSuccess reads the body of a 2xx answer: an
// ExportMetricsServiceResponse, in protobuf or (when the receiver answers
// in JSON) JSON. It returns the data points the receiver rejected and its
// message about them; an empty body is a full success.
func PartialSuccess(contentType string, body []byte) (rejected int64, msg string, err error) {
	if len(body) == 0 {
		return 0, "", nil
	}
	resp := pmetricotlp.NewExportResponse()
	if isJSON(contentType) {
		err = resp.UnmarshalJSON(body)
	} else {
		err = resp.UnmarshalProto(body)
	}
	if err != nil {
		return 0, "", fmt.Errorf("decoding the receiver's answer: %w", err)
	}
	ps := resp.PartialSuccess()
	return max(ps.RejectedDataPoints(), 0), clean(ps.ErrorMessage()), nil
}

// StatusMessage reads the message of an error answer: a google.rpc.Status
// in protobuf or JSON, as OTLP/HTTP receivers send, or else the first line
// of the body as text. It never fails; what cannot be read gives "".
func StatusMessage(contentType string, body []byte) string {
	switch {
	case isJSON(contentType):
		var st struct {
			Message string `json:"message"`
		}
		if json.Unmarshal(body, &st) == nil {
			return clean(st.Message)
		}
	case isProtobuf(contentType):
		return clean(statusProtoMessage(body))
	}
	return clean(string(body))
}

// statusProtoMessage is field 2 (message) of a google.rpc.Status, read
// with protowire: the one field wanted, without the genproto module.
func statusProtoMessage(b []byte) string {
	const fieldMessage = 2
	msg := ""
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return msg
		}
		b = b[n:]
		if num == fieldMessage && typ == protowire.BytesType {
			v, n := protowire.ConsumeBytes(b)
			if n < 0 {
				return msg
			}
			msg = string(v)
			b = b[n:]
			continue
		}
		n = protowire.ConsumeFieldValue(num, typ, b)
		if n < 0 {
			return msg
		}
		b = b[n:]
	}
	return msg
}

func mediaType(contentType string) string {
	mt, _, err := mime.ParseMediaType(contentType)
	if err != nil {
		return ""
	}
	return mt
}

func isJSON(contentType string) bool { return mediaType(contentType) == "application/json" }

func isProtobuf(contentType string) bool {
	mt := mediaType(contentType)
	return mt == "application/x-protobuf" || mt == "application/protobuf"
}

// clean makes a receiver's message fit one log line: valid UTF-8, its
// first line, at most maxMessage bytes.
func clean(s string) string {
	s = strings.ToValidUTF8(s, "?")
	s = strings.TrimSpace(s)
	if i := strings.IndexAny(s, "\r\n"); i >= 0 {
		s = strings.TrimSpace(s[:i])
	}
	if len(s) > maxMessage {
		s = strings.ToValidUTF8(s[:maxMessage], "") + "…"
	}
	return s
}
