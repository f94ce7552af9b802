package otlp

import (
	"encoding/json"
	"errors"
	"fmt"
	"mime"
	"strconv"
	"strings"

	"google.golang.org/protobuf/encoding/protowire"
)

// maxMessage bounds what a receiver's message contributes to a log line.
const maxMessage = 512

// PartialSuccess reads the body of a 2xx answer: an
// ExportMetricsServiceResponse, in protobuf or (when the receiver answers
// in JSON) JSON. It returns the data points the receiver rejected and its
// message about them; an empty body is a full success.
//
// The message is two scalar fields in one nested message, read here with
// protowire rather than with pmetricotlp, which would link gRPC into the
// binary (see Marshal). FuzzPartialSuccess holds it to pmetricotlp's on
// every answer pmetricotlp writes, and FuzzAnswer on any bytes both read
// (pmetricotlp skips some malformed groups that this refuses).
func PartialSuccess(contentType string, body []byte) (rejected int64, msg string, err error) {
	if len(body) == 0 {
		return 0, "", nil
	}
	if isJSON(contentType) {
		rejected, msg, err = partialSuccessJSON(body)
	} else {
		rejected, msg, err = partialSuccessProto(body)
	}
	if err != nil {
		return 0, "", fmt.Errorf("decoding the receiver's answer: %w", err)
	}
	return max(rejected, 0), clean(msg), nil
}

// Field numbers of ExportMetricsServiceResponse and
// ExportMetricsPartialSuccess (opentelemetry-proto, metrics_service.proto).
const (
	responsePartialSuccess = 1 // ExportMetricsPartialSuccess
	partialRejected        = 1 // int64 rejected_data_points
	partialMessage         = 2 // string error_message
)

var errMalformed = errors.New("malformed protobuf")

func partialSuccessProto(b []byte) (rejected int64, msg string, err error) {
	err = eachField(b, func(num protowire.Number, typ protowire.Type, v []byte, x uint64) error {
		if num != responsePartialSuccess {
			return nil
		}
		if typ != protowire.BytesType {
			return errMalformed
		}
		// Occurrences of an embedded message merge: a field it carries
		// replaces the one before.
		return eachField(v, func(num protowire.Number, typ protowire.Type, v []byte, x uint64) error {
			switch {
			case num == partialRejected && typ == protowire.VarintType:
				rejected = int64(x)
			case num == partialMessage && typ == protowire.BytesType:
				msg = string(v) // made valid UTF-8 by clean
			case num == partialRejected || num == partialMessage:
				return errMalformed
			}
			return nil
		})
	})
	if err != nil {
		return 0, "", err
	}
	return rejected, msg, nil
}

// eachField calls f with every field of the message b: its number, wire
// type, and value (v for length-delimited fields, x for varints).
func eachField(b []byte, f func(num protowire.Number, typ protowire.Type, v []byte, x uint64) error) error {
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return errMalformed
		}
		b = b[n:]
		var v []byte
		var x uint64
		switch typ {
		case protowire.BytesType:
			v, n = protowire.ConsumeBytes(b)
		case protowire.VarintType:
			x, n = protowire.ConsumeVarint(b)
		default:
			n = protowire.ConsumeFieldValue(num, typ, b)
		}
		if n < 0 {
			return errMalformed
		}
		b = b[n:]
		if err := f(num, typ, v, x); err != nil {
			return err
		}
	}
	return nil
}

// partialSuccessJSON reads the OTLP/JSON form: lowerCamelCase keys (the
// snake_case ones accepted too), the int64 as a string or a number.
func partialSuccessJSON(b []byte) (int64, string, error) {
	type partial struct {
		Rejected      json.RawMessage `json:"rejectedDataPoints"`
		RejectedSnake json.RawMessage `json:"rejected_data_points"`
		Message       *string         `json:"errorMessage"`
		MessageSnake  *string         `json:"error_message"`
	}
	var resp struct {
		Partial      *partial `json:"partialSuccess"`
		PartialSnake *partial `json:"partial_success"`
	}
	if err := json.Unmarshal(b, &resp); err != nil {
		return 0, "", err
	}
	p := resp.Partial
	if p == nil {
		p = resp.PartialSnake
	}
	if p == nil {
		return 0, "", nil
	}
	raw := p.Rejected
	if raw == nil {
		raw = p.RejectedSnake
	}
	var rejected int64
	if raw != nil && string(raw) != "null" {
		s := strings.Trim(string(raw), `"`)
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return 0, "", fmt.Errorf("rejectedDataPoints %s: %w", raw, err)
		}
		rejected = n
	}
	msg := p.Message
	if msg == nil {
		msg = p.MessageSnake
	}
	if msg == nil {
		return rejected, "", nil
	}
	return rejected, *msg, nil
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
