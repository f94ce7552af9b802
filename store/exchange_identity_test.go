package store

import (
	"fmt"
	"testing"
)

// An exchange is one item, keyed by the prompt that opened it: it counts
// once in amp_exchange_duration_seconds, under the bucket it had when it was
// first counted finished, however its end moves later. An assistant message
// appended to a thread's last exchange moves its end (0.5 s to 100 s here);
// the histogram's _count must stay the number of exchanges.
func TestExchangeMovedByAnAppendedAnswerCountsOnce(t *testing.T) {
	// The prompt is sent at 02:40:00 (userMsg's sentAt).
	answer := func(id int, at string) string {
		return fmt.Sprintf(`{"role":"assistant","messageId":%d,"content":[{"type":"text","text":"ok"}],"state":%s,"usage":{"model":"m1","inputTokens":10,"outputTokens":10,"timestamp":%q}}`,
			id, stEndTurn, at)
	}
	first := []string{userMsg(0, "go"), answer(1, "2026-02-02T02:40:00.500Z")}
	appended := append(first[:2:2], answer(2, "2026-02-02T02:41:40Z"))
	second := append(appended[:3:3], userMsg(3, "again"), answer(4, "2026-02-02T02:40:03Z"))
	steps := []struct {
		msgs []string
		want int64 // exchanges finished so far
	}{{first, 1}, {appended, 1}, {first, 1}, {appended, 1}, {second, 2}}
	s := newTestStore(0)
	for i, st := range steps {
		s.Apply("/d/T-x.json", FileVersion{Size: int64(i)}, summaryOf(t, threadDoc("T-x", "", st.msgs...)))
		if got := familySum(s, FamExchangeBucket); got != st.want {
			t.Fatalf("step %d: amp_exchange_duration_seconds counts %d observations, want %d (one per exchange)", i, got, st.want)
		}
	}
	// The first exchange stays in the bucket it was first counted in
	// (le=1); its sum follows its end.
	if got := series(s, FamExchangeBucket, "", "0"); got != 1 {
		t.Errorf("bucket le=1 holds %d, want 1 (the exchange as first counted)", got)
	}
	restored := newTestStore(0)
	if err := restored.Import(s.Export()); err != nil {
		t.Fatal(err)
	}
	restored.Apply("/d/T-x.json", FileVersion{Size: 9}, summaryOf(t, threadDoc("T-x", "", append(second, answer(5, "2026-02-02T03:40:00Z"))...)))
	if got := familySum(restored, FamExchangeBucket); got != 2 {
		t.Errorf("after a restart and another appended answer: %d observations, want 2", got)
	}
}
