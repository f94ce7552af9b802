package thread

import (
	"testing"
	"time"
)

// TestItemTimeIsCreatedAtFirst: a server message's time is its createdAt
// (the server's clock), before its usage timestamp (the client's) and its
// sentAt; without one, the usage timestamp or sentAt; without any, the
// nearest earlier time; a createdAt that is not an ISO string is none.
func TestItemTimeIsCreatedAtFirst(t *testing.T) {
	doc := `{"v": 1, "id": "T-1", "created": 1773100000000, "messages": [
 {"role": "user", "messageId": "M-aaaaaaaaaaaaaaaaaaaaaa", "createdAt": "2026-03-10T00:00:01.000Z", "meta": {"sentAt": 1773100000500},
  "content": [{"type": "text", "text": "go"}]},
 {"role": "assistant", "messageId": "M-bbbbbbbbbbbbbbbbbbbbbb", "createdAt": "2026-03-10T00:00:09.000Z",
  "content": [{"type": "text", "text": "ok"}], "state": {"type": "complete", "stopReason": "end_turn"},
  "usage": {"model": "m", "inputTokens": 1, "outputTokens": 1, "timestamp": "2026-03-09T23:59:59.000Z"}},
 {"role": "assistant", "messageId": "M-cccccccccccccccccccccc",
  "content": [{"type": "text", "text": "ok"}], "state": {"type": "complete", "stopReason": "end_turn"},
  "usage": {"model": "m", "inputTokens": 1, "outputTokens": 1, "timestamp": "2026-03-10T00:01:00.000Z"}},
 {"role": "user", "messageId": "M-dddddddddddddddddddddd", "createdAt": 17731,
  "content": [{"type": "text", "text": "again"}]}
]}`
	th, err := NewParser().ParseBytes([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	sum := Summarize(th)
	ms := func(s string) int64 {
		ts, err := time.Parse(time.RFC3339, s)
		if err != nil {
			t.Fatal(err)
		}
		return ts.UnixMilli()
	}
	want := []int64{
		ms("2026-03-10T00:00:01Z"), // createdAt, not sentAt
		ms("2026-03-10T00:00:09Z"), // createdAt, not the usage timestamp
		ms("2026-03-10T00:01:00Z"), // no createdAt: the usage timestamp
		ms("2026-03-10T00:01:00Z"), // a number is no createdAt: the nearest earlier
	}
	var got []int64
	for _, it := range sum.Items {
		if it.IsMessage() {
			got = append(got, it.At)
		}
	}
	if len(got) != len(want) {
		t.Fatalf("%d message items, want %d", len(got), len(want))
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("message %d: at %s, want %s", i, time.UnixMilli(got[i]).UTC(), time.UnixMilli(want[i]).UTC())
		}
	}
	if sum.LastActivity != ms("2026-03-10T00:01:00Z") {
		t.Errorf("last activity %s", time.UnixMilli(sum.LastActivity).UTC())
	}
}
