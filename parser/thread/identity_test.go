package thread

import (
	"testing"
)

func summarizeDoc(t *testing.T, doc string) *Summary {
	t.Helper()
	th, err := NewParser().ParseBytes([]byte(doc))
	if err != nil {
		t.Fatalf("parse: %v", err)
	}
	return Summarize(th)
}

// Item 3 of issue 9: forkPointIndex (and relationships[].messageIndex)
// index the file's whole messages[] (docs/formats/amp-threads.md §4.7,
// docs/counting.md rule 11): an info
// message, a message of a role nobody knows, even a non-object entry before
// the fork point take a position, and must not hide one of the fork's own
// messages.
func TestForkPointIndexesTheWholeMessagesArray(t *testing.T) {
	const own = `{"role":"user","messageId":4,"meta":{"sentAt":1770000000000},"content":[{"type":"text","text":"the fork's own prompt"}]},
	 {"role":"assistant","messageId":5,"content":[],"state":{"type":"complete","stopReason":"end_turn"},"usage":{"model":"m1","inputTokens":5,"outputTokens":50}}`
	const copied = `{"role":"user","messageId":0,"content":[{"type":"text","text":"parent prompt"}]},
	 {"role":"info","messageId":1,"content":[{"type":"manual_bash_invocation","args":{"cmd":"ls"}}]},
	 {"role":"supervisor","messageId":2,"content":[]},
	 {"role":"assistant","messageId":3,"content":[],"state":{"type":"complete","stopReason":"end_turn"},"usage":{"model":"m1","inputTokens":10,"outputTokens":100}}`
	for name, fork := range map[string]string{
		"forkPointIndex": `"forkPointIndex":3`,
		"relationship":   `"relationships":[{"threadID":"T-p","type":"fork","role":"child","messageIndex":3}]`,
	} {
		t.Run(name, func(t *testing.T) {
			s := summarizeDoc(t, `{"v":3,"id":"T-f",`+fork+`,"messages":[`+copied+`,`+own+`]}`)
			if s.Prompts != 1 || s.UserMessages != 1 || s.AssistantMessages != 1 {
				t.Errorf("own messages: prompts %d, user %d, assistant %d; want 1, 1, 1", s.Prompts, s.UserMessages, s.AssistantMessages)
			}
			if got := s.Tokens["m1"].Output; got != 50 {
				t.Errorf("own output tokens %d, want 50", got)
			}
			if s.CopiedMessages != 2 {
				t.Errorf("copied messages %d, want 2 (one user, one assistant)", s.CopiedMessages)
			}
		})
	}
	// A non-object entry takes a position too.
	s := summarizeDoc(t, `{"v":3,"id":"T-f","forkPointIndex":1,"messages":[{"role":"user","messageId":0,"content":"p"},7,`+own+`]}`)
	if s.Prompts != 1 || s.AssistantMessages != 1 {
		t.Errorf("after a non-object entry: prompts %d, assistant %d; want 1, 1", s.Prompts, s.AssistantMessages)
	}
}

// Also checked: ledger events a fork copied from its parent (they bill the
// copied messages, or predate the fork) are the parent's spending.
// Counting rules 11 and 14 (docs/counting.md).
func TestLedgerEventsCopiedIntoAForkAreNotCounted(t *testing.T) {
	doc := `{"v":3,"id":"T-f","created":1770000100000,"forkPointIndex":1,"messages":[
	 {"role":"user","messageId":0,"content":"p"},
	 {"role":"assistant","messageId":1,"content":[],"state":{"type":"complete","stopReason":"end_turn"},"usage":{"model":"m1","inputTokens":10,"outputTokens":100}},
	 {"role":"user","messageId":2,"content":"q"},
	 {"role":"assistant","messageId":3,"content":[],"state":{"type":"complete","stopReason":"end_turn"},"usage":{"model":"m1","inputTokens":5,"outputTokens":50}}],
	 "usageLedger":{"events":[
	  {"id":"e1","timestamp":"2026-02-02T02:40:00Z","model":"m1","credits":2,"tokens":{"input":10,"output":100},"toMessageId":1},
	  {"id":"e2","timestamp":"2026-02-02T02:40:10Z","model":"m1","credits":1,"operationType":"title"},
	  {"id":"e3","timestamp":"2026-02-02T03:00:00Z","model":"m1","credits":0.5,"tokens":{"input":5,"output":50},"toMessageId":3}]}}`
	s := summarizeDoc(t, doc)
	if got := s.Tokens["m1"]; got.Input != 5 || got.Output != 50 {
		t.Errorf("fork tokens %+v, want its own event's 5/50", got)
	}
	if got := s.Credits["m1"]; got != 0.5 {
		t.Errorf("fork credits %v, want 0.5", got)
	}
}
