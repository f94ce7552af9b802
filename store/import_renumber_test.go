package store

import "testing"

// Issue 27, item 14: a thread known by the 0-based numeric messageIds of a
// local-era document (0, 1, 2, …) that the server serves, once imported,
// with protocol ids and the CLI's numbering (index + 1). The import rule
// takes over the identity a message had without a protocol id; with the
// numbering moved by one, the takeover by numeric id matches each message
// with its successor, and the thread could count a message twice.
func TestServerImportRenumberedFromZeroCountsOnce(t *testing.T) {
	path := AmpServerPath("T-0199c3d4-8a7b-7e6f-9d0c-1b2a3f4e5d6c")
	before := counts{user: 3, assistant: 4, prompts: 2, output: 1350, input: 65, tools: 1, exchanges: 2}
	grown := counts{user: 4, assistant: 5, prompts: 3, output: 1440, input: 71, tools: 1, exchanges: 3}
	s := newTestStore(0)
	s.Apply(path, FileVersion{AmpServerV: 17}, serverDoc(t, "import-before-0-based.json"))
	if got := countsOf(s); got != before {
		t.Fatalf("before the import: %+v, want %+v", got, before)
	}
	s.Apply(path, FileVersion{AmpServerV: 18}, serverDoc(t, "import-same.json"))
	if got := countsOf(s); got != before {
		t.Fatalf("after the import renumbered the messages from 1: %+v, want %+v", got, before)
	}
	s.Apply(path, FileVersion{AmpServerV: 19}, serverDoc(t, "import-after.json"))
	if got := countsOf(s); got != grown {
		t.Fatalf("after the import and one more exchange: %+v, want %+v", got, grown)
	}
}
