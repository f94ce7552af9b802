package sse

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"testing/iotest"
	"time"
	"unicode/utf8"
)

var update = flag.Bool("update", false, "rewrite testdata/golden/*.golden.json")

// result is everything a parse of a whole stream produces; it is the golden
// file format.
type result struct {
	Events      []goldenEvent `json:"events"`
	LastEventID string        `json:"lastEventID"`
	Retry       *string       `json:"retry"` // time.Duration text; null when no valid retry field was seen
	Comments    int           `json:"comments"`
	BytesRead   int64         `json:"bytesRead"`
	Error       string        `json:"error,omitempty"` // empty on a clean io.EOF

	kind string // "EOF", "line", "event" or "other"
}

type goldenEvent struct {
	ID    string `json:"id"`
	Event string `json:"event"`
	Data  string `json:"data"`
}

func errKind(err error) string {
	switch {
	case errors.Is(err, io.EOF):
		return "EOF"
	case errors.Is(err, ErrLineTooLong):
		return "line"
	case errors.Is(err, ErrEventTooLarge):
		return "event"
	}
	return "other"
}

// parseAll runs a Parser to its end (io.EOF or an error).
func parseAll(r io.Reader, opts Options) result {
	p := NewParser(r, opts)
	res := result{Events: []goldenEvent{}}
	for {
		ev, err := p.Next()
		if err != nil {
			res.kind = errKind(err)
			if res.kind != "EOF" {
				res.Error = err.Error()
			}
			// The error is sticky.
			if _, err2 := p.Next(); err2 != err {
				res.Error += fmt.Sprintf(" [not sticky: then %v]", err2)
			}
			break
		}
		res.Events = append(res.Events, goldenEvent{ID: ev.ID, Event: ev.Event, Data: ev.Data})
	}
	res.LastEventID = p.LastEventID()
	if d, ok := p.Retry(); ok {
		s := d.String()
		res.Retry = &s
	}
	res.Comments = p.Comments()
	res.BytesRead = p.BytesRead()
	return res
}

// readers returns the ways a test input is fed to the parser; all must give
// the same result.
func readers(in []byte) map[string]io.Reader {
	return map[string]io.Reader{
		"direct":   bytes.NewReader(in),
		"onebyte":  iotest.OneByteReader(bytes.NewReader(in)),
		"half":     iotest.HalfReader(bytes.NewReader(in)),
		"dataerr":  iotest.DataErrReader(bytes.NewReader(in)),
		"chunks37": &chunkReader{data: in, sizes: []int{3, 7, 1, 2, 5}},
	}
}

// chunkReader returns data in chunks of the given sizes, cyclically.
type chunkReader struct {
	data  []byte
	sizes []int
	i     int
}

func (c *chunkReader) Read(b []byte) (int, error) {
	if len(c.data) == 0 {
		return 0, io.EOF
	}
	n := min(c.sizes[c.i%len(c.sizes)], len(b), len(c.data))
	c.i++
	copy(b, c.data[:n])
	c.data = c.data[n:]
	return n, nil
}

func TestGolden(t *testing.T) {
	inputs, err := filepath.Glob("testdata/*.sse")
	if err != nil {
		t.Fatal(err)
	}
	if len(inputs) < 15 {
		t.Fatalf("only %d testdata inputs", len(inputs))
	}
	for _, in := range inputs {
		name := strings.TrimSuffix(filepath.Base(in), ".sse")
		t.Run(name, func(t *testing.T) {
			data, err := os.ReadFile(in)
			if err != nil {
				t.Fatal(err)
			}
			got := parseAll(bytes.NewReader(data), Options{})
			if got.kind != "EOF" {
				t.Errorf("ended with %v", got.Error)
			}
			if got.BytesRead != int64(len(data)) {
				t.Errorf("BytesRead = %d, want %d", got.BytesRead, len(data))
			}
			buf, err := json.MarshalIndent(got, "", "  ")
			if err != nil {
				t.Fatal(err)
			}
			buf = append(buf, '\n')
			golden := filepath.Join("testdata", "golden", name+".golden.json")
			if *update {
				if err := os.WriteFile(golden, buf, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run go test -update)", err)
			}
			if !bytes.Equal(buf, want) {
				t.Errorf("result differs from %s:\n got: %s\nwant: %s", golden, buf, want)
			}
			for rname, r := range readers(data) {
				if other := parseAll(r, Options{}); !reflect.DeepEqual(other, got) {
					t.Errorf("%s reader: %+v\nwant %+v", rname, other, got)
				}
			}
			// The differential reference agrees on every golden input.
			if ref := reference(data, DefaultMaxLineBytes, DefaultMaxEventBytes); !sameOutcome(ref, got) {
				t.Errorf("reference: %+v\n  parser: %+v", ref, got)
			}
		})
	}
}

// TestGoldenSemantics pins, independently of the golden files, the points
// of the spec the inputs were written for.
func TestGoldenSemantics(t *testing.T) {
	check := func(file string, want []goldenEvent, lastID string) {
		t.Helper()
		data, err := os.ReadFile(filepath.Join("testdata", file))
		if err != nil {
			t.Fatal(err)
		}
		got := parseAll(bytes.NewReader(data), Options{})
		if !reflect.DeepEqual(got.Events, want) {
			t.Errorf("%s: events\n got %q\nwant %q", file, got.Events, want)
		}
		if got.LastEventID != lastID {
			t.Errorf("%s: LastEventID = %q, want %q", file, got.LastEventID, lastID)
		}
	}
	check("multiline-data.sse", []goldenEvent{
		{"42", "tool_call", "{\n  \"tool\": \"grep\",\n  \"args\": [\"-r\", \"foo\"],\n  \"ok\": true\n}"},
		{"42", "message", "[1,\n 2,\n3]"},
	}, "42")
	check("empty-data.sse", []goldenEvent{
		{"", "message", ""}, {"", "message", ""}, {"", "message", ""},
		{"", "message", "\n"}, {"", "message", "after"},
	}, "")
	check("space-handling.sse", []goldenEvent{
		{"", "message", "x"}, {"", "message", "x"}, {"", "message", " x"},
		{"", "message", "  "}, {"", "message", "\ttab kept"}, {"", " spaced", "y"},
		{" 7", "message", "z"}, {" 7", "message", "x "},
	}, " 7")
	check("no-trailing-blank-line.sse", []goldenEvent{{"", "message", "first"}}, "9")
	check("no-trailing-newline.sse", []goldenEvent{{"", "message", "first"}}, "7")
	check("id-with-nul.sse", []goldenEvent{
		{"1", "message", "a"}, {"1", "message", "b"}, {"", "message", "c"},
		{"5", "message", "d"}, {"6", "message", "e"},
	}, "6")
	check("event-type-reset.sse", []goldenEvent{
		{"", "custom", "1"}, {"", "message", "2"}, {"", "message", "3"},
		{"", "message", "4"}, {"", "b", "5"},
	}, "")
	check("bom-double.sse", []goldenEvent{{"", "message", "visible"}}, "")
	check("invalid-utf8.sse", []goldenEvent{{
		"\uFFFD\uFFFD", "t\uFFFD",
		"a\uFFFDb\n\uFFFD\n\uFFFDx\n\uFFFD\uFFFD\uFFFD\n\uFFFD\n\U0001F600 ok\n\uFFFD\uFFFD\n\uFFFD\uFFFD\uFFFD\uFFFD",
	}}, "\uFFFD\uFFFD")
	crlf := []goldenEvent{{"1", "agent_start", "first\nsecond"}, {"2", "message", "third"}}
	check("crlf.sse", crlf, "2")
	check("cr-only.sse", crlf, "2")
	check("mixed-line-endings.sse", []goldenEvent{
		{"", "message", "a\nb\nc"}, {"", "message", "d"}, {"", "message", "e"}, {"", "message", "f"},
	}, "")
}

func TestRetry(t *testing.T) {
	for _, tc := range []struct {
		line string
		want time.Duration
		ok   bool
	}{
		{"retry: 3000", 3 * time.Second, true},
		{"retry:0", 0, true},
		{"retry: 0250", 250 * time.Millisecond, true},
		{"retry: 9223372036854", 9223372036854 * time.Millisecond, true},
		{"retry: 9223372036855", math.MaxInt64, true},
		{"retry: 99999999999999999999999999999999", math.MaxInt64, true},
		{"retry", 0, false},
		{"retry:", 0, false},
		{"retry: ", 0, false},
		{"retry:  100", 0, false},
		{"retry: 100 ", 0, false},
		{"retry: 1.5", 0, false},
		{"retry: -1", 0, false},
		{"retry: +1", 0, false},
		{"retry: 1e3", 0, false},
		{"retry: \u0663", 0, false}, // ARABIC-INDIC DIGIT THREE is not an ASCII digit
		{"Retry: 5", 0, false},
	} {
		p := NewParser(strings.NewReader(tc.line+"\n"), Options{})
		if _, err := p.Next(); err != io.EOF {
			t.Fatalf("%q: %v", tc.line, err)
		}
		d, ok := p.Retry()
		if d != tc.want || ok != tc.ok {
			t.Errorf("%q: Retry() = %v, %v; want %v, %v", tc.line, d, ok, tc.want, tc.ok)
		}
	}
	// An invalid value keeps the previous one.
	p := NewParser(strings.NewReader("retry: 10\nretry: x\n"), Options{})
	p.Next()
	if d, ok := p.Retry(); d != 10*time.Millisecond || !ok {
		t.Errorf("Retry() = %v, %v after an invalid value", d, ok)
	}
}

func TestAppendUTF8(t *testing.T) {
	// Expected outputs follow the WHATWG Encoding "UTF-8 decoder" (one
	// U+FFFD per maximal subpart).
	for _, tc := range []struct{ in, want string }{
		{"", ""},
		{"plain", "plain"},
		{"é€😀", "é€😀"},
		{"\xff", "\uFFFD"},
		{"\x80\x80", "\uFFFD\uFFFD"},
		{"\xc2", "\uFFFD"},
		{"\xc2A", "\uFFFDA"},
		{"\xc0\x80", "\uFFFD\uFFFD"},           // overlong
		{"\xe0\x80\x80", "\uFFFD\uFFFD\uFFFD"}, // overlong: E0 needs A0..BF
		{"\xe0\xa0", "\uFFFD"},
		{"\xe2\x82", "\uFFFD"},
		{"\xe2\x82A", "\uFFFDA"},
		{"\xe2\x82\xe2\x82\xac", "\uFFFD€"},
		{"\xed\x9f\xbf", "\ud7ff"},
		{"\xed\xa0\x80", "\uFFFD\uFFFD\uFFFD"}, // surrogate
		{"\xef\xbf\xbd", "\uFFFD"},             // a real U+FFFD
		{"\xf0\x9f\x98", "\uFFFD"},
		{"\xf0\x9f\x98A", "\uFFFDA"},
		{"\xf0\x80\x80\x80", "\uFFFD\uFFFD\uFFFD\uFFFD"},
		{"\xf4\x8f\xbf\xbf", "\U0010FFFF"},
		{"\xf4\x90\x80\x80", "\uFFFD\uFFFD\uFFFD\uFFFD"},
		{"\xf5\x80", "\uFFFD\uFFFD"},
		{"a\xffb\xfec", "a\uFFFDb\uFFFDc"},
	} {
		if got := string(appendUTF8(nil, []byte(tc.in))); got != tc.want {
			t.Errorf("appendUTF8(%q) = %q, want %q", tc.in, got, tc.want)
		}
		if got := whatwgDecode([]byte(tc.in)); got != tc.want {
			t.Errorf("whatwgDecode(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestLineTooLong(t *testing.T) {
	opts := Options{MaxLineBytes: 16}
	ok := "data: 0123456789" // exactly 16 bytes: accepted
	for _, eol := range []string{"\n", "\r", "\r\n"} {
		in := ok + eol + eol + "data: 01234567890" + eol + eol
		for rname, r := range readers([]byte(in)) {
			p := NewParser(r, opts)
			ev, err := p.Next()
			if err != nil || ev.Data != "0123456789" {
				t.Fatalf("%q/%s: first event %+v, %v", eol, rname, ev, err)
			}
			_, err = p.Next()
			if !errors.Is(err, ErrLineTooLong) {
				t.Fatalf("%q/%s: err = %v, want ErrLineTooLong", eol, rname, err)
			}
			off := 16 + 2*len(eol)
			if !strings.Contains(err.Error(), fmt.Sprintf("offset %d ", off)) {
				t.Errorf("%q/%s: error %q lacks the offset %d", eol, rname, err, off)
			}
			if _, err2 := p.Next(); err2 != err {
				t.Errorf("%q/%s: not sticky: %v", eol, rname, err2)
			}
		}
	}
	// A long line without any line end (a stream that never sends one)
	// errors out instead of growing; bounded by the limit, not the stream.
	big := bytes.Repeat([]byte("x"), 1<<20)
	p := NewParser(bytes.NewReader(big), Options{MaxLineBytes: 1000})
	if _, err := p.Next(); !errors.Is(err, ErrLineTooLong) {
		t.Fatalf("err = %v", err)
	}
	if p.BytesRead() > 1000 || cap(p.line) > 1000 {
		t.Errorf("consumed %d bytes, line buffer %d for a 1000-byte limit", p.BytesRead(), cap(p.line))
	}
	// Lines longer than the read buffer are assembled (default limit).
	long := strings.Repeat("y", 3*readBufferSize+17)
	p = NewParser(strings.NewReader("data: "+long+"\n\n"), Options{})
	if ev, err := p.Next(); err != nil || ev.Data != long {
		t.Fatalf("long line: %d bytes, %v", len(ev.Data), err)
	}
}

func TestEventTooLarge(t *testing.T) {
	opts := Options{MaxEventBytes: 10}
	// Data of exactly 10 bytes ("12345\n1234") is accepted.
	in := "data: 12345\ndata: 1234\n\ndata: 12345\ndata: 12345\n\n"
	for rname, r := range readers([]byte(in)) {
		p := NewParser(r, opts)
		ev, err := p.Next()
		if err != nil || ev.Data != "12345\n1234" {
			t.Fatalf("%s: first event %+v, %v", rname, ev, err)
		}
		_, err = p.Next()
		if !errors.Is(err, ErrEventTooLarge) {
			t.Fatalf("%s: err = %v, want ErrEventTooLarge", rname, err)
		}
		if !strings.Contains(err.Error(), "offset 36 ") {
			t.Errorf("%s: error %q lacks the offset 36", rname, err)
		}
		if _, err2 := p.Next(); err2 != err {
			t.Errorf("%s: not sticky: %v", rname, err2)
		}
	}
	// The limit applies after U+FFFD replacement (1 byte becomes 3).
	p := NewParser(strings.NewReader("data: \xff\xff\xff\xff\n\n"), opts)
	if _, err := p.Next(); !errors.Is(err, ErrEventTooLarge) {
		t.Fatalf("err = %v", err)
	}
	// Many small data lines cannot grow the buffer past the limit either.
	p = NewParser(strings.NewReader(strings.Repeat("data: x\n", 1000)), Options{MaxEventBytes: 100})
	if _, err := p.Next(); !errors.Is(err, ErrEventTooLarge) {
		t.Fatalf("err = %v", err)
	}
	if cap(p.data) > 256 {
		t.Errorf("data buffer grew to %d", cap(p.data))
	}
}

func TestReadError(t *testing.T) {
	boom := errors.New("connection reset")
	r := io.MultiReader(strings.NewReader("data: a\n\ndata: b\n"), iotest.ErrReader(boom))
	p := NewParser(r, Options{})
	if ev, err := p.Next(); err != nil || ev.Data != "a" {
		t.Fatalf("first: %+v, %v", ev, err)
	}
	_, err := p.Next()
	if !errors.Is(err, boom) || err == boom {
		t.Fatalf("err = %v, want wrapped %v", err, boom)
	}
	if errors.Is(err, io.EOF) || errors.Is(err, ErrLineTooLong) {
		t.Errorf("err %v matches the wrong sentinel", err)
	}
	if !strings.Contains(err.Error(), "after 17 bytes") {
		t.Errorf("error %q lacks the offset", err)
	}
	if _, err2 := p.Next(); err2 != err {
		t.Errorf("not sticky: %v", err2)
	}
	// An error before any byte (during the BOM check).
	p = NewParser(iotest.ErrReader(boom), Options{})
	if _, err := p.Next(); !errors.Is(err, boom) {
		t.Fatalf("err = %v", err)
	}
	// ... and in the middle of a possible BOM.
	p = NewParser(io.MultiReader(strings.NewReader("\xef\xbb"), iotest.ErrReader(boom)), Options{})
	if _, err := p.Next(); !errors.Is(err, boom) {
		t.Fatalf("err = %v", err)
	}
	// A reader that makes no progress.
	p = NewParser(zeroReader{}, Options{})
	if _, err := p.Next(); !errors.Is(err, io.ErrNoProgress) {
		t.Fatalf("err = %v", err)
	}
}

type zeroReader struct{}

func (zeroReader) Read([]byte) (int, error) { return 0, nil }

// scriptReader returns its chunks one Read at a time, then fails the test:
// the parser must not read ahead of what a dispatch needs.
type scriptReader struct {
	t      *testing.T
	chunks []string
}

func (s *scriptReader) Read(b []byte) (int, error) {
	if len(s.chunks) == 0 {
		s.t.Fatal("read past the script: the parser blocked waiting for more input")
	}
	n := copy(b, s.chunks[0])
	s.chunks[0] = s.chunks[0][n:]
	if s.chunks[0] == "" {
		s.chunks = s.chunks[1:]
	}
	return n, nil
}

func TestNoReadAhead(t *testing.T) {
	// Each chunk completes one event; Next must return it without another
	// Read (a live stream would block there). In particular a CR at the end
	// of a read is a complete line end: the LF that may follow is skipped
	// when it arrives.
	r := &scriptReader{t: t, chunks: []string{
		"data: 1\n\n",
		"data: 2\r\r",
		"\ndata: 3\r\n\r",
		"\n: c\ndata: 4\r\r",
		"\r\n",
		"data: 5\n", "\n",
		"\xef\xbb\xbfdata: 6\n\n", // not at the start: not a BOM
	}}
	p := NewParser(r, Options{})
	for _, want := range []string{"1", "2", "3", "4", "5"} {
		ev, err := p.Next()
		if err != nil || ev.Data != want {
			t.Fatalf("got %+v, %v; want data %q", ev, err, want)
		}
	}
	if p.Comments() != 1 {
		t.Errorf("Comments() = %d", p.Comments())
	}
	// A short first chunk at the start (BOM check) must not block either.
	r = &scriptReader{t: t, chunks: []string{":\n"}}
	p = NewParser(r, Options{})
	r.chunks = append(r.chunks, "data: x\n\n")
	if ev, err := p.Next(); err != nil || ev.Data != "x" || p.Comments() != 1 {
		t.Fatalf("got %+v, %v", ev, err)
	}
}

func TestCRLFSplitAcrossReads(t *testing.T) {
	// CR ends one read and LF starts the next: one line end, not two (two
	// would be a blank line and dispatch "a" before "b" is appended).
	in := []byte("data: a\r\ndata: b\r\n\r\n")
	for _, r := range []io.Reader{
		iotest.OneByteReader(bytes.NewReader(in)),
		&chunkReader{data: in, sizes: []int{8, 1, 100}},
	} {
		got := parseAll(r, Options{})
		want := []goldenEvent{{"", "message", "a\nb"}}
		if !reflect.DeepEqual(got.Events, want) || got.kind != "EOF" {
			t.Errorf("got %+v", got)
		}
	}
}

func TestBOM(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []goldenEvent
	}{
		{"\xef\xbb\xbfdata: a\n\n", []goldenEvent{{"", "message", "a"}}},
		{"\xef\xbb\xbf\n", []goldenEvent{}},
		{"\xef\xbb\xbf", []goldenEvent{}},
		{"\xef\xbb", []goldenEvent{}},
		{"\xef\xbb\n\n", []goldenEvent{}},        // field "\uFFFD", unknown
		{"\xef\xbbdata: a\n\n", []goldenEvent{}}, // not a BOM: "\uFFFDdata" is unknown
		{"\xef\xbb\xbf:c\ndata: a\n\n", []goldenEvent{{"", "message", "a"}}},
	} {
		for rname, r := range readers([]byte(tc.in)) {
			got := parseAll(r, Options{})
			if !reflect.DeepEqual(got.Events, tc.want) || got.kind != "EOF" || got.BytesRead != int64(len(tc.in)) {
				t.Errorf("%q/%s: %+v", tc.in, rname, got)
			}
		}
	}
}

func TestLastEventIDPersists(t *testing.T) {
	p := NewParser(strings.NewReader("id: a\ndata: 1\n\ndata: 2\n\nid: b\n\nid: c\n"), Options{})
	for _, want := range []string{"a", "a"} {
		ev, err := p.Next()
		if err != nil || ev.ID != want {
			t.Fatalf("got %+v, %v", ev, err)
		}
	}
	if _, err := p.Next(); err != io.EOF {
		t.Fatal(err)
	}
	if got := p.LastEventID(); got != "c" {
		t.Errorf("LastEventID() = %q, want c (the buffer, updated without dispatch)", got)
	}
}

func TestAllocs(t *testing.T) {
	// One allocation per event: ID and Data share one string when the ID
	// changed (small events), the event type string is reused while it
	// repeats, and no line allocates.
	stream := benchStream(1000)
	p := NewParser(bytes.NewReader(stream), Options{})
	p.Next() // warm up the buffers
	allocs := testing.AllocsPerRun(500, func() {
		if _, err := p.Next(); err != nil {
			t.Fatal(err)
		}
	})
	if allocs > 1 {
		t.Errorf("%v allocations per event, want 1", allocs)
	}
}

// ---- differential reference ----

// whatwgDecode is the WHATWG Encoding "UTF-8 decoder" written as the spec's
// state machine (independently of appendUTF8).
func whatwgDecode(in []byte) string {
	var out []rune
	var cp rune
	needed, seen := 0, 0
	lower, upper := byte(0x80), byte(0xBF)
	for i := 0; ; {
		if i == len(in) {
			if needed != 0 {
				out = append(out, utf8.RuneError)
			}
			break
		}
		b := in[i]
		if needed == 0 {
			switch {
			case b <= 0x7F:
				out = append(out, rune(b))
			case b >= 0xC2 && b <= 0xDF:
				needed, cp = 1, rune(b&0x1F)
			case b >= 0xE0 && b <= 0xEF:
				if b == 0xE0 {
					lower = 0xA0
				}
				if b == 0xED {
					upper = 0x9F
				}
				needed, cp = 2, rune(b&0xF)
			case b >= 0xF0 && b <= 0xF4:
				if b == 0xF0 {
					lower = 0x90
				}
				if b == 0xF4 {
					upper = 0x8F
				}
				needed, cp = 3, rune(b&0x7)
			default:
				out = append(out, utf8.RuneError)
			}
			i++
			continue
		}
		if b < lower || b > upper {
			cp, needed, seen, lower, upper = 0, 0, 0, 0x80, 0xBF
			out = append(out, utf8.RuneError)
			continue // reprocess b
		}
		lower, upper = 0x80, 0xBF
		cp = cp<<6 | rune(b&0x3F)
		seen++
		i++
		if seen == needed {
			out = append(out, cp)
			cp, needed, seen = 0, 0, 0
		}
	}
	return string(out)
}

// splitLines splits at CRLF, LF and CR; rest is the unterminated tail.
func splitLines(s string) (lines []string, rest string) {
	s = strings.ReplaceAll(s, "\r\n", "\n")
	s = strings.ReplaceAll(s, "\r", "\n")
	parts := strings.Split(s, "\n")
	return parts[:len(parts)-1], parts[len(parts)-1]
}

// reference interprets a whole stream the way the spec describes it:
// decode, split into lines, process each line.
func reference(in []byte, maxLine, maxEvent int) result {
	res := result{Events: []goldenEvent{}, kind: "EOF"}
	raw := bytes.TrimPrefix(in, []byte("\xef\xbb\xbf"))
	rawLines, rawRest := splitLines(string(raw))
	lines, _ := splitLines(whatwgDecode(raw))
	if len(lines) != len(rawLines) {
		panic("decoding changed the line structure")
	}
	var data, typ, id strings.Builder
	for i, line := range lines {
		if len(rawLines[i]) > maxLine {
			res.kind = "line"
			break
		}
		if line == "" {
			if data.Len() > 0 {
				d := strings.TrimSuffix(data.String(), "\n")
				t := typ.String()
				if t == "" {
					t = "message"
				}
				res.Events = append(res.Events, goldenEvent{id.String(), t, d})
			}
			data.Reset()
			typ.Reset()
			continue
		}
		if strings.HasPrefix(line, ":") {
			res.Comments++
			continue
		}
		name, value, found := strings.Cut(line, ":")
		if found {
			value = strings.TrimPrefix(value, " ")
		}
		switch name {
		case "event":
			typ.Reset()
			typ.WriteString(value)
		case "data":
			if data.Len()+len(value) > maxEvent {
				res.kind = "event"
			}
			data.WriteString(value)
			data.WriteString("\n")
		case "id":
			if !strings.Contains(value, "\x00") {
				id.Reset()
				id.WriteString(value)
			}
		case "retry":
			if value != "" && strings.Trim(value, "0123456789") == "" {
				d := time.Duration(math.MaxInt64)
				ms, err := strconv.ParseInt(value, 10, 64)
				if err == nil && ms <= math.MaxInt64/int64(time.Millisecond) {
					d = time.Duration(ms) * time.Millisecond
				}
				s := d.String()
				res.Retry = &s
			}
		}
		if res.kind != "EOF" {
			break
		}
	}
	if res.kind == "EOF" && len(rawRest) > maxLine {
		res.kind = "line"
	}
	res.LastEventID = id.String()
	return res
}

// sameOutcome compares what the reference models (not error texts).
func sameOutcome(ref, got result) bool {
	return ref.kind == got.kind &&
		reflect.DeepEqual(ref.Events, got.Events) &&
		ref.LastEventID == got.LastEventID &&
		reflect.DeepEqual(ref.Retry, got.Retry) &&
		ref.Comments == got.Comments
}

func FuzzParser(f *testing.F) {
	inputs, _ := filepath.Glob("testdata/*.sse")
	for _, in := range inputs {
		data, err := os.ReadFile(in)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Add([]byte("data: a\r"))
	f.Add([]byte("\r\n\r\n\r\r"))
	f.Add([]byte("id: x\x00\nretry: 12\n\n"))
	f.Fuzz(func(t *testing.T, in []byte) {
		for _, lim := range []Options{
			{},
			{MaxLineBytes: 12, MaxEventBytes: 20},
			{MaxLineBytes: 1 + len(in)%17, MaxEventBytes: 1 + len(in)%23},
		} {
			maxLine, maxEvent := lim.MaxLineBytes, lim.MaxEventBytes
			if maxLine == 0 {
				maxLine, maxEvent = DefaultMaxLineBytes, DefaultMaxEventBytes
			}
			got := parseAll(bytes.NewReader(in), lim)
			if strings.Contains(got.Error, "not sticky") || got.kind == "other" {
				t.Fatalf("%+v: %s", lim, got.Error)
			}
			for _, ev := range got.Events {
				if !utf8.ValidString(ev.Data) || !utf8.ValidString(ev.ID) || !utf8.ValidString(ev.Event) {
					t.Fatalf("invalid UTF-8 in %+q", ev)
				}
				if ev.Event == "" {
					t.Fatalf("empty event type in %+q", ev)
				}
			}
			if got.kind == "EOF" && got.BytesRead != int64(len(in)) {
				t.Fatalf("BytesRead = %d at EOF, want %d", got.BytesRead, len(in))
			}
			if got.BytesRead > int64(len(in)) {
				t.Fatalf("BytesRead = %d > %d", got.BytesRead, len(in))
			}
			one := parseAll(iotest.OneByteReader(bytes.NewReader(in)), lim)
			if got.kind != "EOF" {
				// How far the stream was read before an error depends on
				// the read sizes.
				one.BytesRead, got.BytesRead = 0, 0
			}
			if !reflect.DeepEqual(one, got) {
				t.Fatalf("%+v: one byte at a time:\n%+v\nwhole:\n%+v", lim, one, got)
			}
			ref := reference(in, maxLine, maxEvent)
			if len(ref.Events) != len(got.Events) {
				t.Fatalf("%+v: %d events, reference %d", lim, len(got.Events), len(ref.Events))
			}
			if !sameOutcome(ref, got) {
				t.Fatalf("%+v: differs from the reference:\nparser:    %+v\nreference: %+v", lim, got, ref)
			}
		}
	})
}

// ---- benchmarks ----

// benchStream is n events of the shape an agent stream sends.
func benchStream(n int) []byte {
	var b bytes.Buffer
	for i := range n {
		fmt.Fprintf(&b, "id: %d\nevent: agent_end\ndata: "+
			`{"type":"agent_end","thread":"T-0f5e2b1c-1234-4cde-9abc-0123456789ab","seq":%d,`+
			`"usage":{"input_tokens":1234,"output_tokens":567},"model":"claude-sonnet-4"}`+"\n\n", i, i)
	}
	return b.Bytes()
}

const benchEvents = 200_000

func BenchmarkParser(b *testing.B) {
	stream := benchStream(benchEvents)
	b.SetBytes(int64(len(stream)))
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		p := NewParser(bytes.NewReader(stream), Options{})
		n := 0
		for {
			_, err := p.Next()
			if err != nil {
				if err != io.EOF {
					b.Fatal(err)
				}
				break
			}
			n++
		}
		if n != benchEvents {
			b.Fatalf("%d events", n)
		}
	}
	b.ReportMetric(float64(benchEvents)*float64(b.N)/b.Elapsed().Seconds(), "events/s")
}

// BenchmarkBufioScanLines is the baseline: a bare bufio.Scanner line scan
// (LF only, nothing interpreted) of the same bytes; events/s counts every
// four lines as one event.
func BenchmarkBufioScanLines(b *testing.B) {
	stream := benchStream(benchEvents)
	b.SetBytes(int64(len(stream)))
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		sc := bufio.NewScanner(bytes.NewReader(stream))
		sc.Buffer(make([]byte, readBufferSize), DefaultMaxLineBytes)
		lines := 0
		for sc.Scan() {
			lines++
		}
		if sc.Err() != nil || lines != 4*benchEvents {
			b.Fatalf("%d lines, %v", lines, sc.Err())
		}
	}
	b.ReportMetric(float64(benchEvents)*float64(b.N)/b.Elapsed().Seconds(), "events/s")
}
