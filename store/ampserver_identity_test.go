package store

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/amp-exporter/amp-exporter/parser/thread"
)

// Issue 17, item 10: messages on the server keep their identity. The
// documents in testdata/server have the shape the Amp CLI gives a thread
// it builds from server data (a numeric messageId, its index + 1, and a
// protocolMessageID "M-…"), or the string "M-…" messageId form.

func serverDoc(t *testing.T, name string) *thread.Summary {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", "server", name))
	if err != nil {
		t.Fatal(err)
	}
	return summaryOf(t, string(data))
}

// counts is what a test checks of a store: the figures a user reads.
type counts struct {
	user, assistant, prompts, output, input, tools, exchanges int64
}

func countsOf(s *ThreadStore) counts {
	return counts{
		user:      series(s, FamMessages, "user", ""),
		assistant: series(s, FamMessages, "assistant", ""),
		prompts:   familySum(s, FamPrompts),
		output:    sumType(s, "output"),
		input:     sumType(s, "input"),
		tools:     familySum(s, FamToolCalls),
		exchanges: familySum(s, FamExchangeBucket),
	}
}

// A prompt edited and answered between two syncs, the thread as long as
// before: the edit's new prompt and answer reuse the numeric messageIds of
// the ones they replace, but carry new protocol ids. They are new spend;
// what the replaced ones counted stays counted.
func TestServerEditBetweenSyncsCountsTheNewAnswer(t *testing.T) {
	before := counts{user: 3, assistant: 4, prompts: 2, output: 1350, input: 65, tools: 1, exchanges: 2}
	// + the edited prompt and its answer (9 input, 950 output) and their
	// exchange.
	after := counts{user: 4, assistant: 5, prompts: 3, output: 2300, input: 74, tools: 1, exchanges: 3}
	for _, form := range []string{"", "-string-ids"} {
		t.Run("form"+form, func(t *testing.T) {
			s := newTestStore(0)
			path := AmpServerPath("T-019a7c21-5e0f-7d3a-b1c4-2f9e8d7c6b5a")
			s.Apply(path, FileVersion{AmpServerV: 23}, serverDoc(t, "edit-before"+form+".json"))
			if got := countsOf(s); got != before {
				t.Fatalf("before the edit: %+v, want %+v", got, before)
			}
			s.Apply(path, FileVersion{AmpServerV: 31}, serverDoc(t, "edit-after"+form+".json"))
			if got := countsOf(s); got != after {
				t.Fatalf("after the edit: %+v, want %+v", got, after)
			}
			// Read again (the next full sync): nothing moves.
			s.Apply(path, FileVersion{AmpServerV: 31}, serverDoc(t, "edit-after"+form+".json"))
			if got := countsOf(s); got != after {
				t.Fatalf("read again: %+v, want %+v", got, after)
			}
		})
	}
}

// An old thread imported into the server's thread store: every message,
// which had no protocol id, gets a fresh one; content and usage stay at
// their places. The thread counts once, and what the user adds after the
// import counts.
func TestServerImportedThreadDoesNotCountAgain(t *testing.T) {
	path := AmpServerPath("T-0199c3d4-8a7b-7e6f-9d0c-1b2a3f4e5d6c")
	before := counts{user: 3, assistant: 4, prompts: 2, output: 1350, input: 65, tools: 1, exchanges: 2}
	grown := counts{user: 4, assistant: 5, prompts: 3, output: 1440, input: 71, tools: 1, exchanges: 3}

	s := newTestStore(0)
	s.Apply(path, FileVersion{AmpServerV: 17}, serverDoc(t, "import-before.json"))
	if got := countsOf(s); got != before {
		t.Fatalf("before the import: %+v, want %+v", got, before)
	}
	if s.Apply(path, FileVersion{AmpServerV: 17}, serverDoc(t, "import-same.json")) {
		t.Error("the import alone moved a counter")
	}
	if got := countsOf(s); got != before {
		t.Fatalf("after the import: %+v, want %+v", got, before)
	}
	s.Apply(path, FileVersion{AmpServerV: 19}, serverDoc(t, "import-after.json"))
	if got := countsOf(s); got != grown {
		t.Fatalf("after the import and one more exchange: %+v, want %+v", got, grown)
	}
	want := s.Snapshot().Totals()

	// The same thread served with string ids: local-era numeric ids
	// before the import, "M-" messageIds after it (no numeric id left to
	// match): the thread still counts once.
	s3 := newTestStore(0)
	s3.Apply(path, FileVersion{AmpServerV: 17}, serverDoc(t, "import-before-string-ids.json"))
	s3.Apply(path, FileVersion{AmpServerV: 19}, serverDoc(t, "import-after-string-ids.json"))
	assertSameTotals(t, "string ids", want, s3.Snapshot().Totals())

	// Imported and continued between two syncs: the same totals.
	s2 := newTestStore(0)
	s2.Apply(path, FileVersion{AmpServerV: 17}, serverDoc(t, "import-before.json"))
	s2.Apply(path, FileVersion{AmpServerV: 19}, serverDoc(t, "import-after.json"))
	assertSameTotals(t, "imported and continued in one step", want, s2.Snapshot().Totals())
}

// Pins saved by an exporter that keyed these messages by their numeric
// messageId (it did not read protocolMessageID) are taken over after a
// restore: the thread's next version does not count its messages again.
func TestServerPinsRestoredFromNumericKeys(t *testing.T) {
	path := AmpServerPath("T-0199c3d4-8a7b-7e6f-9d0c-1b2a3f4e5d6c")
	s := newTestStore(0)
	s.Apply(path, FileVersion{AmpServerV: 17}, serverDoc(t, "import-before.json"))
	restored := newTestStore(0)
	if err := restored.Import(roundTrip(t, s.Export())); err != nil {
		t.Fatal(err)
	}
	restored.Apply(path, FileVersion{AmpServerV: 19}, serverDoc(t, "import-after.json"))
	want := counts{user: 4, assistant: 5, prompts: 3, output: 1440, input: 71, tools: 1, exchanges: 3}
	if got := countsOf(restored); got != want {
		t.Fatalf("after a restore: %+v, want %+v", got, want)
	}
	// And saved again, restored again, read again: nothing moves.
	again := newTestStore(0)
	if err := again.Import(roundTrip(t, restored.Export())); err != nil {
		t.Fatal(err)
	}
	again.Apply(path, FileVersion{AmpServerV: 19}, serverDoc(t, "import-after.json"))
	assertSameTotals(t, "restored twice", restored.Snapshot().Totals(), again.Snapshot().Totals())
}

// A subagent's messages (parentToolUseId) count like any other: the
// fixtures' Task subagent answer is one of their assistant messages.
func TestServerSubagentMessagesCount(t *testing.T) {
	sum := serverDoc(t, "edit-before.json")
	if sum.AssistantMessages != 4 || sum.Tokens["claude-opus-4-6"].Output != 1350 {
		t.Fatalf("assistant messages %d, output %d; want 4 and 1350 (the subagent's 220 included)",
			sum.AssistantMessages, sum.Tokens["claude-opus-4-6"].Output)
	}
}

// The same from a state file the exporter wrote before it read protocol
// ids (testdata/server/state-before-protocol-ids.json: import-same.json
// counted by that version, which keyed its messages by numeric messageId).
func TestServerStateWrittenBeforeProtocolIDs(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("testdata", "server", "state-before-protocol-ids.json"))
	if err != nil {
		t.Fatal(err)
	}
	var st State
	if err := json.Unmarshal(data, &st); err != nil {
		t.Fatal(err)
	}
	s := newTestStore(0)
	if err := s.Import(&st); err != nil {
		t.Fatal(err)
	}
	path := AmpServerPath("T-0199c3d4-8a7b-7e6f-9d0c-1b2a3f4e5d6c")
	if s.Apply(path, FileVersion{AmpServerV: 18}, serverDoc(t, "import-same.json")) {
		t.Error("the thread it counted, read again, moved a counter")
	}
	s.Apply(path, FileVersion{AmpServerV: 19}, serverDoc(t, "import-after.json"))
	want := counts{user: 4, assistant: 5, prompts: 3, output: 1440, input: 71, tools: 1, exchanges: 3}
	if got := countsOf(s); got != want {
		t.Fatalf("after the restore: %+v, want %+v", got, want)
	}
}

// A child thread (parentThreadID: create_thread, plugin agents, scheduled
// runs) is a thread of its own: counted once, in full, beside its parent,
// and not taken for a fork of it.
func TestServerChildThreadIsAThreadOfItsOwn(t *testing.T) {
	s := newTestStore(0)
	s.Apply(AmpServerPath("T-019a7c21-5e0f-7d3a-b1c4-2f9e8d7c6b5a"), FileVersion{AmpServerV: 23}, serverDoc(t, "edit-before.json"))
	s.Apply(AmpServerPath("T-019a7c30-0b1c-7d2e-8f3a-4b5c6d7e8f90"), FileVersion{AmpServerV: 4}, serverDoc(t, "child-thread.json"))
	want := counts{user: 4, assistant: 5, prompts: 3, output: 1390, input: 72, tools: 1, exchanges: 3}
	if got := countsOf(s); got != want {
		t.Fatalf("parent and child: %+v, want %+v", got, want)
	}
	if n := s.PresentThreads(); n != 2 {
		t.Errorf("%d threads present, want 2", n)
	}
}

// The rule for a thread whose messages all change identity at once takes
// the new messages for the old ones only when they give at least what the
// old ones counted: a first prompt edited between two syncs, answered
// with less, is a new prompt and a new answer.
func TestServerFirstPromptEditedIsNotAnImport(t *testing.T) {
	doc := func(v int, prompt, answer string, out int) string {
		return fmt.Sprintf(`{"v":%d,"id":"T-019a7c40-aaaa-7bbb-8ccc-dddddddddddd","created":1774512000000,"agentMode":"smart","messages":[
		 {"role":"user","messageId":1,"protocolMessageID":%q,"meta":{"sentAt":1774512001000},"content":[{"type":"text","text":"hello"}]},
		 {"role":"assistant","messageId":2,"protocolMessageID":%q,"content":[{"type":"text","text":"hi"}],"state":{"type":"complete","stopReason":"end_turn"},
		  "usage":{"model":"claude-opus-4-6","maxInputTokens":168000,"inputTokens":5,"outputTokens":%d,"cacheCreationInputTokens":0,"cacheReadInputTokens":0,"totalInputTokens":5,"timestamp":"2026-03-26T08:00:09.000Z"}}]}`,
			v, prompt, answer, out)
	}
	s := newTestStore(0)
	path := AmpServerPath("T-019a7c40-aaaa-7bbb-8ccc-dddddddddddd")
	s.Apply(path, FileVersion{AmpServerV: 3}, summaryOf(t, doc(3, "M-aaaaaaaaaaaaaaaaaaaaa1", "M-aaaaaaaaaaaaaaaaaaaaa2", 700)))
	s.Apply(path, FileVersion{AmpServerV: 7}, summaryOf(t, doc(7, "M-bbbbbbbbbbbbbbbbbbbbb1", "M-bbbbbbbbbbbbbbbbbbbbb2", 500)))
	want := counts{user: 2, assistant: 2, prompts: 2, output: 1200, input: 10, exchanges: 2}
	if got := countsOf(s); got != want {
		t.Fatalf("%+v, want %+v", got, want)
	}

	// Answered with more (or as much): still a new prompt and a new
	// answer, counted in full. The thread was keyed by protocol ids
	// before, so its messages all changing identity is an edit of its
	// first prompt (an import gives protocol ids to messages that had
	// none), whatever the new answer costs.
	for _, out := range []int{700, 900} {
		s := newTestStore(0)
		s.Apply(path, FileVersion{AmpServerV: 3}, summaryOf(t, doc(3, "M-aaaaaaaaaaaaaaaaaaaaa1", "M-aaaaaaaaaaaaaaaaaaaaa2", 700)))
		s.Apply(path, FileVersion{AmpServerV: 7}, summaryOf(t, doc(7, "M-bbbbbbbbbbbbbbbbbbbbb1", "M-bbbbbbbbbbbbbbbbbbbbb2", out)))
		want := counts{user: 2, assistant: 2, prompts: 2, output: int64(700 + out), input: 10, exchanges: 2}
		if got := countsOf(s); got != want {
			t.Errorf("answered with %d output tokens: %+v, want %+v", out, got, want)
		}
	}
}
