package thread

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"testing/iotest"
	"time"

	"github.com/amp-exporter/amp-exporter/internal/testsupport/threadgen"
)

var update = flag.Bool("update", false, "rewrite the golden files")

// fixtureFiles are the thread fixtures: testdata/*.json, which other
// packages read as a corpus too (the collector's golden exposition, the
// end-to-end test's expected sums), and testdata/repository/*.json, read
// here alone (their goldens are in testdata/golden with the others).
func fixtureFiles() ([]string, error) {
	files, err := filepath.Glob("testdata/*.json")
	if err != nil {
		return nil, err
	}
	more, err := filepath.Glob("testdata/repository/*.json")
	return append(files, more...), err
}

// golden is what a fixture must decode to: a summary, or the reason it is
// refused.
type golden struct {
	Error   string   `json:"error,omitempty"`
	Summary *Summary `json:"summary,omitempty"`
}

func parseFixture(t *testing.T, data []byte) golden {
	t.Helper()
	p := NewParser()
	// Through a reader that hands over one byte at a time, so every token
	// straddles a read; the result must equal the in-memory parse.
	// A Thread is valid until the parser's next call: summarize each first.
	var s1, s2 *Summary
	var items1 []Item
	th, err := p.Parse(iotest.OneByteReader(bytes.NewReader(data)))
	if err == nil {
		s1 = Summarize(th)
		if !s1.ItemsValid() {
			t.Fatal("items invalid before the parser's next parse")
		}
		items1 = slices.Clone(s1.Items)
	}
	th2, err2 := p.ParseBytes(data)
	if s1 != nil && s1.ItemsValid() {
		t.Fatal("items still valid after the parser's next parse reused them")
	}
	if (err == nil) != (err2 == nil) || (err != nil && Reason(err) != Reason(err2)) {
		t.Fatalf("reader and bytes disagree: %v vs %v", err, err2)
	}
	if err != nil {
		return golden{Error: Reason(err)}
	}
	s2 = Summarize(th2)
	if !reflect.DeepEqual(items1, s2.Items) {
		t.Fatalf("reader and bytes items differ:\n%+v\n%+v", items1, s2.Items)
	}
	s1.gen, s1.parses, s2.gen, s2.parses = 0, nil, 0, nil
	s1.Items, s2.Items = nil, nil
	if !reflect.DeepEqual(s1, s2) {
		t.Fatalf("reader and bytes summaries differ:\n%+v\n%+v", s1, s2)
	}
	return golden{Summary: s1}
}

func TestGolden(t *testing.T) {
	files, err := fixtureFiles()
	if err != nil || len(files) == 0 {
		t.Fatalf("no fixtures: %v", err)
	}
	for _, file := range files {
		name := strings.TrimSuffix(filepath.Base(file), ".json")
		t.Run(name, func(t *testing.T) {
			data, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			got, err := json.MarshalIndent(parseFixture(t, data), "", "  ")
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, '\n')
			path := filepath.Join("testdata", "golden", name+".golden.json")
			if *update {
				if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(path, got, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run go test ./parser/thread -update to create it)", err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("summary differs from %s (go test -update rewrites it):\n%s", path, got)
			}
		})
	}
}

// TestFastParserMatchesReference checks the scanner-based decoder against a
// plain encoding/json decoder of the same rules on every fixture.
func TestFastParserMatchesReference(t *testing.T) {
	files, _ := fixtureFiles()
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		compareWithReference(t, data)
	}
}

// TestFastParserMatchesReferenceOnGeneratedThreads does the same on
// realistic generated threads (tool output full of escaped quotes, images,
// files of a few MB), in memory and through the streaming window, where the
// scanner's block kernel and its hand-offs at window boundaries do the work.
func TestFastParserMatchesReferenceOnGeneratedThreads(t *testing.T) {
	g := threadgen.New(threadgen.Options{Threads: 24, TotalBytes: 12 << 20, Seed: 11, Start: time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)})
	p := NewParser()
	for i := 0; i < g.Len(); i++ {
		_, data := g.Thread(i)
		compareWithReference(t, data)
		ref, err := referenceParse(data)
		if err != nil || ref == nil {
			t.Fatalf("thread %d: the reference cannot read a generated thread: %v", i, err)
		}
		th, err := p.Parse(bytes.NewReader(data))
		if err != nil {
			t.Fatalf("thread %d through a reader: %v", i, err)
		}
		if !reflect.DeepEqual(withoutStorage(th), ref) {
			t.Fatalf("thread %d: streamed parse differs from the reference", i)
		}
	}
}

func compareWithReference(t *testing.T, data []byte) {
	t.Helper()
	p := NewParser()
	fast, fastErr := p.ParseBytes(data)
	ref, refErr := referenceParse(data)
	if refErr != nil {
		// The fast parser skips bulk without validating it, so it may
		// accept documents encoding/json refuses; it must never invent a
		// thread from a document that has no "v", though.
		return
	}
	if ref == nil {
		if fastErr == nil {
			t.Fatalf("reference says not a thread, fast parser accepted %q", data)
		}
		return
	}
	if fastErr != nil {
		t.Fatalf("fast parser: %v; encoding/json accepts %q", fastErr, data)
	}
	if !reflect.DeepEqual(withoutStorage(fast), ref) {
		t.Fatalf("fast and reference differ on %q:\nfast %+v\nref  %+v", data, fast, ref)
	}
	// Which messages are the thread's own is checked against the spec's
	// rule applied to the raw document, not against the parser's fields.
	s := Summarize(fast)
	if user, assistant, prompts, ok := referenceOwnMessages(data); ok {
		if s.UserMessages != user || s.AssistantMessages != assistant || s.Prompts != prompts {
			t.Fatalf("own messages of %q: user %d assistant %d prompts %d, the spec says %d %d %d",
				data, s.UserMessages, s.AssistantMessages, s.Prompts, user, assistant, prompts)
		}
	}
}

// withoutStorage returns a copy of a parsed thread without the parser's
// storage pointers, to compare it with the reference.
func withoutStorage(th *Thread) *Thread {
	c := *th
	c.items, c.gen, c.parses = nil, 0, nil
	return &c
}

func TestReasons(t *testing.T) {
	tests := map[string]string{
		`{"id":"T-1","messages":[]}`:    ReasonNotThread,
		`[1,2]`:                         ReasonNotThread,
		`"v"`:                           ReasonNotThread,
		`{"v":1,"messages":[{"role":`:   ReasonTruncated,
		``:                              ReasonTruncated,
		`{"v":1,"messages":[}`:          ReasonSyntax,
		`{"v":1} {"v":2}`:               ReasonSyntax,
		`@`:                             ReasonSyntax,
		`{"v":1,"messages":"nope"}`:     "",
		`{"v":"seven","messages":null}`: "",
	}
	for doc, want := range tests {
		_, err := NewParser().ParseBytes([]byte(doc))
		got := ""
		if err != nil {
			got = Reason(err)
		}
		if got != want {
			t.Errorf("%q: reason %q (err %v), want %q", doc, got, err, want)
		}
	}
}

func FuzzParse(f *testing.F) {
	files, _ := fixtureFiles()
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			f.Fatal(err)
		}
		if len(data) < 20000 {
			f.Add(data)
		}
	}
	f.Add([]byte(`{"v":1,"forkPointIndex":5,"messages":[{"role":"user","content":[{"type":"tool_result","toolUseID":"a","run":{"status":"done"}}]}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		compareWithReference(t, data)
		if th, err := NewParser().ParseBytes(data); err == nil {
			s := Summarize(th)
			for model, tok := range s.Tokens {
				if tok.Input < 0 || tok.Output < 0 || tok.CacheRead < 0 || tok.CacheCreation < 0 {
					t.Fatalf("negative tokens for %q: %+v", model, tok)
				}
			}
		}
	})
}
