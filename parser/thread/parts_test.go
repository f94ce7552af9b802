package thread

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/amp-exporter/amp-exporter/internal/jsonscan"
	"github.com/amp-exporter/amp-exporter/internal/testsupport/threadgen"
)

// member is one top-level member of a thread document: its key as written
// and decoded, and its value.
type member struct {
	raw, key string
	value    []byte
}

// splitDoc takes a document apart as the server sends it: its members but
// "messages", and the spans of its messages.
func splitDoc(doc []byte) (members []member, messages [][]byte, ok bool) {
	sc := jsonscan.NewBytes(doc)
	obj := sc.Object()
	for key, ok := obj.Next(); ok; key, ok = obj.Next() {
		k := string(key)
		if k == "messages" {
			arr := sc.Array()
			for arr.Next() {
				sc.Peek()
				from := sc.Offset()
				sc.Skip()
				if sc.Err() != nil {
					return nil, nil, false
				}
				messages = append(messages, doc[from:sc.Offset()])
			}
			continue
		}
		sc.Peek()
		from := sc.Offset()
		sc.Skip()
		if sc.Err() != nil {
			return nil, nil, false
		}
		members = append(members, member{raw: fmt.Sprintf("%q", k), key: k, value: doc[from:sc.Offset()]})
	}
	return members, messages, sc.Err() == nil
}

// object writes members as an object.
func object(members []member, tail string) []byte {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, m := range members {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, "%s:%s", m.raw, m.value)
	}
	if tail != "" {
		if len(members) > 0 {
			b.WriteByte(',')
		}
		b.WriteString(tail)
	}
	b.WriteByte('}')
	return b.Bytes()
}

// assembled is the document the parts make, as the server's client builds
// it: data's members but any "messages", then the messages, the first at
// index from (the places before it null).
func assembled(data []member, from int, messages [][]byte) []byte {
	var kept []member
	for _, m := range data {
		if m.key != "messages" {
			kept = append(kept, m)
		}
	}
	var b bytes.Buffer
	b.WriteString(`"messages":[`)
	for i := range from {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString("null")
	}
	for i, m := range messages {
		if i > 0 || from > 0 {
			b.WriteByte(',')
		}
		b.Write(m)
	}
	b.WriteByte(']')
	return object(kept, b.String())
}

type parsed struct {
	err      string
	messages []Message
	items    []Item
	sum      *Summary
}

func parseResult(th *Thread, err error) parsed {
	if err != nil {
		return parsed{err: Reason(err)}
	}
	sum := Summarize(th)
	out := parsed{messages: slices.Clone(th.Messages), items: slices.Clone(sum.Items), sum: sum}
	sum.gen, sum.parses, sum.Items = 0, nil, nil
	return out
}

// TestParsePartsSameAsDocument: a thread parsed from its parts gives what
// the document they make gives, on fixtures and generated threads, whole
// and from an index, with a "messages" member inside data (escaped or not),
// escaped keys, no messages, and messages that are not objects.
func TestParsePartsSameAsDocument(t *testing.T) {
	docs := map[string][]byte{}
	files, _ := fixtureFiles()
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if bytes.HasPrefix(bytes.TrimSpace(b), []byte("{")) && jsonscan.NewBytes(b).Peek() == jsonscan.Object {
			docs[filepath.Base(f)] = b
		}
	}
	g := threadgen.New(threadgen.Options{Threads: 6, TotalBytes: 3 << 20, Seed: 5, Start: time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)})
	for i := range g.Len() {
		name, b := g.Thread(i)
		docs["gen-"+name] = b
	}
	whole, byParts := NewParser(), NewParser()
	n := 0
	for name, doc := range docs {
		members, messages, ok := splitDoc(doc)
		if !ok || len(messages) < 2 {
			continue
		}
		n++
		ownMessages := member{raw: `"messages"`, key: "messages", value: []byte(`[{"role":"user","content":[{"type":"text","text":"never counted"}],"messageId":0}]`)}
		escaped := ownMessages
		escaped.raw = `"messa\u0067es"`
		escKey := func(ms []member) []member {
			out := slices.Clone(ms)
			for i := range out {
				if out[i].key == "v" {
					out[i].raw = `"\u0076"`
				}
			}
			return out
		}
		cases := []struct {
			name     string
			data     []member
			from     int
			messages [][]byte
		}{
			{"whole", members, 0, messages},
			{"from", members, len(messages) / 2, messages[len(messages)/2:]},
			{"last", members, len(messages) - 1, messages[len(messages)-1:]},
			{"no messages", members, 0, nil},
			{"no messages from", members, 3, nil},
			{"own messages first", append([]member{ownMessages}, members...), 0, messages},
			{"own messages last", append(slices.Clone(members), ownMessages), 1, messages[1:]},
			{"escaped messages key", append(slices.Clone(members), escaped), 0, messages},
			{"escaped key", escKey(members), 0, messages},
			{"not objects", members, 1, append([][]byte{[]byte("null"), []byte(" 7 "), []byte(`"x"`), []byte("[1,{}]")}, messages[1:]...)},
		}
		for _, c := range cases {
			data := object(c.data, "")
			want := parseResult(whole.ParseBytes(assembled(c.data, c.from, c.messages)))
			got := parseResult(ParseParts(byParts, data, c.from, c.messages))
			if !reflect.DeepEqual(got, want) {
				t.Errorf("%s, %s: parts give\n%+v\nthe document\n%+v", name, c.name, got, want)
			}
			if want.err == "" && c.name == "whole" && len(want.messages) == 0 {
				t.Errorf("%s: no messages counted: the test cannot fail", name)
			}
		}
	}
	if n < 8 {
		t.Fatalf("only %d documents with messages", n)
	}
}

// TestParsePartsErrors: a part that is not one JSON value, or data that is
// not a thread, is an error as in the document.
func TestParsePartsErrors(t *testing.T) {
	p := NewParser()
	data := []byte(`{"v":1,"id":"T-1"}`)
	msg := []byte(`{"role":"user","content":[{"type":"text","text":"hi"}]}`)
	for _, c := range []struct {
		name     string
		data     []byte
		messages [][]byte
		reason   string
	}{
		{"data after a message", data, [][]byte{msg, []byte(`{"role":"user"} x`)}, ReasonSyntax},
		{"two values", data, [][]byte{[]byte(`{} {}`)}, ReasonSyntax},
		{"truncated message", data, [][]byte{[]byte(`{"role":"user","content":[`)}, ReasonTruncated},
		{"empty message", data, [][]byte{msg, {}}, ReasonTruncated},
		{"bad message", data, [][]byte{[]byte(`{"role":}`)}, ReasonSyntax},
		{"no v", []byte(`{"id":"T-1"}`), [][]byte{msg}, ReasonNotThread},
		{"data not an object", []byte(`[]`), [][]byte{msg}, ReasonNotThread},
		{"bad data", []byte(`{"v":1,`), [][]byte{msg}, ReasonTruncated},
	} {
		_, err := ParseParts(p, c.data, 0, c.messages)
		if err == nil || Reason(err) != c.reason {
			t.Errorf("%s: %v (%s), want %s", c.name, err, Reason(err), c.reason)
		}
	}
	th, err := ParseParts(p, data, 4, [][]byte{msg})
	if err != nil || len(th.Messages) != 1 || th.Messages[0].Index != 4 {
		t.Fatalf("a valid thread after errors: %+v %v", th, err)
	}
}
