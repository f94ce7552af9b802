package ampserver

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"reflect"
	"strings"
	"testing"
)

type fixedBody struct {
	status int
	body   string
}

func (f fixedBody) RoundTrip(*http.Request) (*http.Response, error) {
	return &http.Response{StatusCode: f.status, Header: http.Header{}, Body: io.NopCloser(strings.NewReader(f.body))}, nil
}

// TestScannedDecodeAsEncodingJSON: thread tails and pages decoded by
// scanning give what encoding/json gives, and fail the same way on
// answers of another shape.
func TestScannedDecodeAsEncodingJSON(t *testing.T) {
	for _, tc := range []struct {
		name, body   string
		wantT, wantP error // nil: decoded
	}{
		{"tail", `{"ok":true,"result":{"thread":{"id":"T-1","title":null,"creatorUserID":"u","data":{"v":3,"id":"T-1"}},"messages":[{"role":"user","x":"a\"]}"} , {"role":"assistant"}],"hasMoreBefore":true,"more":{"a":[1,2]}}}`, nil, nil},
		{"page", `{"ok":true,"result":{"messages":[{"a":1},[],"s",null],"nextMessageIndex":7}}`, nil, nil},
		{"last page", ` {"result":{"messages":[],"nextMessageIndex":null},"ok":true} `, nil, nil},
		{"no messages", `{"ok":true,"result":{}}`, nil, nil},
		{"messages not an array", `{"ok":true,"result":{"messages":{"a":1}}}`, ErrBadDocument, ErrBadDocument},
		{"hasMoreBefore a string", `{"ok":true,"result":{"messages":[],"hasMoreBefore":"yes"}}`, ErrBadDocument, nil},
		{"nextMessageIndex a string", `{"ok":true,"result":{"messages":[{}],"nextMessageIndex":"1"}}`, nil, ErrBadDocument},
		{"thread not an object", `{"ok":true,"result":{"thread":[1]}}`, ErrBadDocument, nil},
		{"result not an object", `{"ok":true,"result":[1]}`, ErrBadDocument, ErrBadDocument},
		{"error envelope", `{"ok":false,"error":{"code":"thread-not-found","message":"gone"}}`, ErrThreadNotFound, ErrThreadNotFound},
		{"no ok", `{"result":{"messages":[]}}`, ErrBadResponse, ErrBadResponse},
		{"not json", `<html>`, ErrBadResponse, ErrBadResponse},
		{"truncated", `{"ok":true,"result":{"messages":[{"a":"b`, ErrBadResponse, ErrBadResponse},
		{"data after", `{"ok":true,"result":{}} x`, ErrBadResponse, ErrBadResponse},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newTestClient(t, "http://127.0.0.1:1", &recorder{}, func(o *Options) {
				o.Transport = fixedBody{200, tc.body}
				o.Retries = -1
			})
			var tail Tail
			var page Page
			errT := c.Call(context.Background(), MethodGetThreadTail, nil, &tail)
			errP := c.Call(context.Background(), MethodGetThreadMessagesPage, nil, &page)
			for j, err := range []error{errT, errP} {
				want := []error{tc.wantT, tc.wantP}[j]
				if want == nil && err != nil || want != nil && !errors.Is(err, want) {
					t.Fatalf("%v, want %v", err, want)
				}
			}
			if tc.wantT != nil || tc.wantP != nil {
				return
			}
			tail.body, page.body = nil, nil // the buffer the spans lie in
			// What encoding/json reads from the same answer.
			var jsonTail Tail
			var jsonPage Page
			for _, r := range []any{&jsonTail, &jsonPage} {
				if err := json.Unmarshal([]byte(tc.body), &envelope{Result: r}); err != nil {
					t.Fatal(err)
				}
			}
			if got, want := []any{tail, page}, []any{jsonTail, jsonPage}; !reflect.DeepEqual(got, want) {
				t.Fatalf("scanned %+v\nencoding/json %+v", got, want)
			}
		})
	}
}
