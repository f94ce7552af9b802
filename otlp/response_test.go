package otlp

import (
	"strings"
	"testing"
	"unicode/utf8"

	"go.opentelemetry.io/collector/pdata/pmetric/pmetricotlp"
)

func TestPartialSuccessAnswers(t *testing.T) {
	jsonResp := func(rejected int64, msg string) []byte {
		r := pmetricotlp.NewExportResponse()
		r.PartialSuccess().SetRejectedDataPoints(rejected)
		r.PartialSuccess().SetErrorMessage(msg)
		b, err := r.MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	for _, tc := range []struct {
		name, ct string
		body     []byte
		rejected int64
		msg      string
		err      bool
	}{
		{"empty body", "application/x-protobuf", nil, 0, "", false},
		{"full success", "application/x-protobuf", partial(0, ""), 0, "", false},
		{"protobuf partial", "application/x-protobuf", partial(3, "bad names\nsecond line"), 3, "bad names", false},
		{"JSON partial", "application/json; charset=utf-8", jsonResp(2, "too old"), 2, "too old", false},
		{"a warning without rejections", "application/x-protobuf", partial(0, "slow down"), 0, "slow down", false},
		{"negative count", "application/x-protobuf", partial(-5, "odd"), 0, "odd", false},
		{"garbage", "application/x-protobuf", []byte{0xff, 0xff, 0xff}, 0, "", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rejected, msg, err := PartialSuccess(tc.ct, tc.body)
			if rejected != tc.rejected || msg != tc.msg || (err != nil) != tc.err {
				t.Fatalf("got %d %q %v, want %d %q error %v", rejected, msg, err, tc.rejected, tc.msg, tc.err)
			}
		})
	}
}

func TestStatusMessage(t *testing.T) {
	status := append([]byte{0x08, 0x03, 0x12, 0x05}, "nope!"...)
	// details (field 3) before the message, which must be skipped.
	withDetails := append([]byte{0x1a, 0x02, 0x0a, 0x00, 0x12, 0x02}, "ok"...)
	for _, tc := range []struct {
		name, ct string
		body     []byte
		want     string
	}{
		{"protobuf status", "application/x-protobuf", status, "nope!"},
		{"protobuf status after details", "application/protobuf", withDetails, "ok"},
		{"truncated protobuf", "application/x-protobuf", status[:6], ""},
		{"JSON status", "application/json", []byte(`{"code":3,"message":"bad\nrequest"}`), "bad"},
		{"JSON that is not a status", "application/json", []byte(`[1,2]`), "[1,2]"},
		{"text", "text/plain", []byte("  rate limited \r\n more"), "rate limited"},
		{"no content type", "", []byte("plain"), "plain"},
		{"invalid UTF-8", "text/plain", []byte{'a', 0xff, 'b'}, "a?b"},
		{"long", "text/plain", []byte(strings.Repeat("é", 600)), strings.Repeat("é", maxMessage/2) + "…"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := StatusMessage(tc.ct, tc.body); got != tc.want {
				t.Fatalf("got %q, want %q", got, tc.want)
			}
		})
	}
}

// The answers come from the network: whatever the bytes, the decoders
// neither panic nor return more than one valid line of bounded length,
// and a protobuf answer both read reads as pmetricotlp, the OpenTelemetry
// Collector's own decoder, reads it.
func FuzzAnswer(f *testing.F) {
	f.Add("application/x-protobuf", partial(3, "bad names"))
	f.Add("application/x-protobuf", append(partial(3, "bad names"), partial(0, "other")...))
	f.Add("application/x-protobuf", append([]byte{0x08, 0x03, 0x12, 0x05}, "nope!"...))
	f.Add("application/json", []byte(`{"partialSuccess":{"rejectedDataPoints":"2","errorMessage":"x"}}`))
	f.Add("application/json", []byte(`{"code":3,"message":"bad"}`))
	f.Add("text/plain", []byte("oops\nmore"))
	f.Fuzz(func(t *testing.T, ct string, body []byte) {
		check := func(what, s string) {
			if !utf8.ValidString(s) || strings.ContainsAny(s, "\r\n") || len(s) > maxMessage+len("…") {
				t.Fatalf("%s: %q", what, s)
			}
		}
		rejected, msg, err := PartialSuccess(ct, body)
		if rejected < 0 || (err != nil && (rejected != 0 || msg != "")) {
			t.Fatalf("PartialSuccess: %d %q %v", rejected, msg, err)
		}
		check("PartialSuccess", msg)
		check("StatusMessage", StatusMessage(ct, body))

		if isJSON(ct) || len(body) == 0 {
			return
		}
		ref := pmetricotlp.NewExportResponse()
		if ref.UnmarshalProto(body) == nil && err == nil {
			ps := ref.PartialSuccess()
			if want := max(ps.RejectedDataPoints(), 0); rejected != want || msg != clean(ps.ErrorMessage()) {
				t.Fatalf("PartialSuccess %d %q, pmetricotlp %d %q", rejected, msg, want, ps.ErrorMessage())
			}
		}
	})
}

// Every answer pmetricotlp writes reads back the same.
func FuzzPartialSuccess(f *testing.F) {
	f.Add(int64(3), "bad names")
	f.Add(int64(0), "")
	f.Add(int64(-1), "négatif\nsecond")
	f.Fuzz(func(t *testing.T, rejected int64, msg string) {
		body := partial(rejected, msg)
		got, gotMsg, err := PartialSuccess("application/x-protobuf", body)
		if err != nil || got != max(rejected, 0) || gotMsg != clean(msg) {
			t.Fatalf("read %d %q %v from %d %q", got, gotMsg, err, rejected, msg)
		}
		resp := pmetricotlp.NewExportResponse()
		resp.PartialSuccess().SetRejectedDataPoints(rejected)
		resp.PartialSuccess().SetErrorMessage(msg)
		js, err := resp.MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		got, gotMsg, err = PartialSuccess("application/json", js)
		// JSON carries strings as valid UTF-8 (invalid bytes replaced by
		// the encoder): the message is compared where it was valid.
		if err != nil || got != max(rejected, 0) || (utf8.ValidString(msg) && gotMsg != clean(msg)) {
			t.Fatalf("read %d %q %v from JSON %s", got, gotMsg, err, js)
		}
	})
}
