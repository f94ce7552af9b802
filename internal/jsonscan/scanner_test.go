package jsonscan

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"io"
	"math/bits"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
	"testing/iotest"
	"unicode/utf8"
)

// decodeAny rebuilds a value through the scanner's API, so it can be compared
// with encoding/json.
func decodeAny(s *Scanner) any {
	switch s.Peek() {
	case Object:
		m := map[string]any{}
		obj := s.Object()
		for k, ok := obj.Next(); ok; k, ok = obj.Next() {
			key := string(k)
			m[key] = decodeAny(s)
		}
		return m
	case Array:
		a := []any{}
		arr := s.Array()
		for arr.Next() {
			a = append(a, decodeAny(s))
		}
		return a
	case String:
		v, _ := s.String()
		return string(v)
	case Number:
		f, _ := s.Float()
		return f
	case Bool:
		b, _ := s.Bool()
		return b
	case Null:
		s.Skip()
		return nil
	}
	return nil
}

// scanners returns the ways a document can reach the scanner: in memory,
// through a reader, and through a tiny window fed one byte at a time (which
// puts every token across a window boundary).
func scanners(doc []byte) map[string]*Scanner {
	return map[string]*Scanner{
		"bytes":  NewBytes(doc),
		"reader": New(bytes.NewReader(doc)),
		"tiny":   {r: iotest.OneByteReader(bytes.NewReader(doc)), buf: make([]byte, 3)},
	}
}

func checkDecode(t *testing.T, doc []byte) {
	t.Helper()
	var want any
	wantErr := json.Unmarshal(doc, &want)
	for name, s := range scanners(doc) {
		got := decodeAny(s)
		atEOF := s.AtEOF()
		err := s.Err()
		if wantErr != nil {
			continue // the scanner may be lenient where it skips; it must not panic
		}
		if err != nil || !atEOF {
			t.Fatalf("%s: %q: err=%v atEOF=%v, encoding/json accepts it", name, doc, err, atEOF)
		}
		// encoding/json replaces invalid UTF-8 with U+FFFD; the scanner
		// passes bytes through and leaves cleaning to label validation.
		if utf8.Valid(doc) && !reflect.DeepEqual(got, want) {
			t.Fatalf("%s: %q: got %#v, want %#v", name, doc, got, want)
		}
	}
}

func checkSkip(t *testing.T, doc []byte) {
	t.Helper()
	if !json.Valid(doc) {
		return
	}
	for name, s := range scanners(doc) {
		s.Skip()
		if !s.AtEOF() || s.Err() != nil {
			t.Fatalf("%s: skip %q: err=%v, not at EOF", name, doc, s.Err())
		}
	}
}

var seeds = []string{
	`{}`, `[]`, `""`, `0`, `-1.5e+3`, `true`, `false`, `null`,
	`{"a":1,"b":[1,2,{"c":"d"}],"e":null,"f":true}`,
	`{"s":"quote \" backslash \\ slash \/ nl \n tab \t uni \u00e9 \u001b[0m pair \ud83d\ude00 lone \ud800 x"}`,
	`["\\", "\\\\", "\\\"", "a\\\\\\\"b", "\"\\\""]`,
	`{"deep":[[[[[[[[[[{"x":"]}\"{["}]]]]]]]]]]}`,
	"  \n\t{ \"spaced\" : [ 1 , 2 ] }  \n",
	`{"big":` + `"` + strings.Repeat(`ab\"cd\\`, 1000) + `"}`,
	`{"num":12345678901234567890}`,
	`{"a":"é日本\u2028"}`,
}

func TestDecodeMatchesEncodingJSON(t *testing.T) {
	for _, doc := range seeds {
		checkDecode(t, []byte(doc))
		checkSkip(t, []byte(doc))
	}
}

func TestTruncatedIsReported(t *testing.T) {
	doc := []byte(`{"v":3,"messages":[{"role":"user","content":[{"type":"text","text":"a \"quoted\" \\ word"}]}],"tail":[1,2,3]}`)
	for cut := 1; cut < len(doc); cut++ {
		for name, s := range scanners(doc[:cut]) {
			decodeAny(s)
			if s.Err() == nil && s.AtEOF() && s.Err() == nil {
				t.Fatalf("%s: document cut at %d (%q) was accepted", name, cut, doc[:cut])
			}
		}
		// Skipping must notice the cut too: that is how bulk is read.
		s := NewBytes(doc[:cut])
		s.Skip()
		if s.Err() == nil && s.AtEOF() {
			t.Fatalf("skip: document cut at %d (%q) was accepted", cut, doc[:cut])
		}
	}
}

func TestSyntaxErrors(t *testing.T) {
	for _, doc := range []string{`{"a" 1}`, `{"a":1 "b":2}`, `[1 2]`, `{1:2}`, `tru`, `{"a":-}`, `{"a":01}`, `@`, `{"a":"\x"}`} {
		s := NewBytes([]byte(doc))
		decodeAny(s)
		s.AtEOF()
		if s.Err() == nil {
			t.Errorf("%q: no error", doc)
		}
	}
}

func TestTypedReadsSkipOtherKinds(t *testing.T) {
	s := NewBytes([]byte(`{"a":{"x":[1,"]"]},"b":"str","c":7}`))
	obj := s.Object()
	var got []string
	for k, ok := obj.Next(); ok; k, ok = obj.Next() {
		key := string(k)
		switch key {
		case "a":
			if _, ok := s.Int(); ok {
				t.Errorf("Int on an object reported ok")
			}
		case "b":
			if _, ok := s.Int(); ok {
				t.Errorf("Int on a string reported ok")
			}
		case "c":
			if v, ok := s.String(); ok {
				t.Errorf("String on a number = %q", v)
			}
		}
		got = append(got, key)
	}
	if s.Err() != nil || !s.AtEOF() {
		t.Fatalf("err=%v", s.Err())
	}
	if strings.Join(got, ",") != "a,b,c" {
		t.Fatalf("keys = %v", got)
	}
}

type failingReader struct{}

func (failingReader) Read([]byte) (int, error) { return 0, errors.New("disk on fire") }

func TestReadErrorIsWrapped(t *testing.T) {
	s := New(io.MultiReader(strings.NewReader(`{"a":`), failingReader{}))
	decodeAny(s)
	if err := s.Err(); err == nil || !strings.Contains(err.Error(), "disk on fire") {
		t.Fatalf("err = %v", err)
	}
}

func TestLongKeptTokenIsBounded(t *testing.T) {
	doc := `{"k":"` + strings.Repeat("x", maxToken+10) + `"}`
	s := New(strings.NewReader(doc))
	obj := s.Object()
	for _, ok := obj.Next(); ok; _, ok = obj.Next() {
		s.String()
	}
	if !errors.Is(s.Err(), ErrTokenTooLong) {
		t.Fatalf("err = %v, want ErrTokenTooLong", s.Err())
	}
	// Skipping the same value is fine: skipped values have no length limit.
	s = New(strings.NewReader(doc))
	s.Skip()
	if s.Err() != nil || !s.AtEOF() {
		t.Fatalf("skip err = %v", s.Err())
	}
}

func FuzzScanner(f *testing.F) {
	for _, s := range seeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, doc []byte) {
		checkDecode(t, doc)
		checkSkip(t, doc)
	})
}

func TestResetBytesNeverWritesIntoTheDocument(t *testing.T) {
	doc := []byte(`{"a":"` + strings.Repeat("x", 300<<10) + `"}`)
	orig := append([]byte(nil), doc...)
	s := NewBytes(doc)
	s.Skip()
	s.Reset(strings.NewReader(`{"b":"` + strings.Repeat("y", 300<<10) + `"}`))
	s.Skip()
	if s.Err() != nil || !bytes.Equal(doc, orig) {
		t.Fatalf("a reader parse after ResetBytes changed the caller's document (err %v)", s.Err())
	}
}

func TestStringPrefix(t *testing.T) {
	long := strings.Repeat(`ab\"c\\d\u00e9`, 400000) // far past maxToken once decoded? no: checks skipping
	for name, s := range scanners([]byte(`["Tool execution cancelled: user \"stop\"", "` + long + `", "short", 7]`)) {
		arr := s.Array()
		var got []string
		for arr.Next() {
			v, ok := s.StringPrefix(26)
			if ok {
				got = append(got, string(v))
			} else {
				got = append(got, "<not a string>")
			}
		}
		want := []string{"Tool execution cancelled: ", `ab"c\dé` + `ab"c\dé` + `ab"c\dé` + `ab`, "short", "<not a string>"}
		if s.Err() != nil || !s.AtEOF() || strings.Join(got, "|") != strings.Join(want, "|") {
			t.Fatalf("%s: got %q err %v, want %q", name, got, s.Err(), want)
		}
	}
}

// TestQuoteOrBackslashFindsTheFirst checks the word-at-a-time search used by
// readString against a byte loop, on words dense in the bytes that could
// confuse it (quotes, backslashes, their neighbours, 0x00, 0x80, 0xff).
func TestQuoteOrBackslashFindsTheFirst(t *testing.T) {
	alphabet := []byte{'"', '\\', '!', '#', '[', ']', 0x00, 0x01, 0x21, 0x5b, 0x5d, 0x7f, 0x80, 0xa2, 0xdc, 0xff, 'a'}
	rng := rand.New(rand.NewPCG(1, 2))
	var word [8]byte
	for n := 0; n < 200000; n++ {
		for i := range word {
			word[i] = alphabet[rng.IntN(len(alphabet))]
		}
		want := 8
		for i, c := range word {
			if c == '"' || c == '\\' {
				want = i
				break
			}
		}
		got := 8
		if m := quoteOrBackslash(binary.LittleEndian.Uint64(word[:])); m != 0 {
			got = bits.TrailingZeros64(m) >> 3
		}
		if got != want {
			t.Fatalf("%q: first quote or backslash at %d, want %d", word, got, want)
		}
	}
}

// chunkReader hands out its data n bytes per Read, so window refills land
// in the middle of skipped values.
type chunkReader struct {
	data []byte
	n    int
}

func (r *chunkReader) Read(p []byte) (int, error) {
	if len(r.data) == 0 {
		return 0, io.EOF
	}
	k := min(len(p), r.n, len(r.data))
	copy(p, r.data[:k])
	r.data = r.data[k:]
	return k, nil
}

// checkSkipEnd wraps doc in an array behind a string with escaped quotes,
// so that Skip hands the rest of the array, doc included, to skipRest and
// its block kernel, and checks where the skip ends against the byte-wise
// rules (blkStep): the offset just past the closing bracket, or a
// truncation error when the input ends first. The bulk of the skipped
// bytes need not be valid JSON: the scanner is lenient inside values it
// skips, and so are the rules.
func checkSkipEnd(t *testing.T, doc []byte, chunk int) {
	t.Helper()
	wrapped := []byte(`["` + strings.Repeat(`\"ab`, 20) + `",`)
	wrapped = append(wrapped, doc...)
	wrapped = append(wrapped, ']')
	st := blockState{depth: 1}
	want := -1 // offset past the value, or -1 when the input ends first
	for i := 1; i < len(wrapped); i++ {
		blkStep(&st, wrapped[i])
		if st.depth > maxDepth {
			return // the scanner reports nesting; not what is checked here
		}
		if st.depth == 0 {
			want = i + 1
			break
		}
	}
	for name, s := range map[string]*Scanner{
		"bytes":   NewBytes(wrapped),
		"chunked": New(&chunkReader{data: wrapped, n: chunk}),
	} {
		s.Skip()
		switch {
		case want < 0:
			if !errors.Is(s.Err(), ErrTruncated) {
				t.Fatalf("%s: skip of %q: err=%v, want truncated", name, wrapped, s.Err())
			}
		case s.Err() != nil || s.Offset() != int64(want):
			t.Fatalf("%s: skip of %q ended at %d (err %v), want %d", name, wrapped, s.Offset(), s.Err(), want)
		}
	}
}

func TestSkipEndMatchesByteRules(t *testing.T) {
	for _, seed := range seeds {
		for _, chunk := range []int{1, 7, 64, 100, 1 << 20} {
			checkSkipEnd(t, []byte(seed), chunk)
		}
	}
	checkSkipEnd(t, []byte(`"unterminated \" string`), 65)
	checkSkipEnd(t, []byte(`{"a":[1,2}`), 65)
}

func FuzzSkipEnd(f *testing.F) {
	for _, s := range seeds {
		f.Add([]byte(s), uint8(65))
	}
	f.Fuzz(func(t *testing.T, doc []byte, chunk uint8) {
		checkSkipEnd(t, doc, int(chunk)+1)
	})
}

// TestStringPrefixEveryLimit: StringPrefix(limit) is the string's decoded
// units (a plain byte, or what one escape stands for) up to the first
// that reaches limit bytes, at every limit, whatever the window size;
// decoding copies runs of plain bytes at once and must stop where the
// byte-at-a-time decoder stopped.
func TestStringPrefixEveryLimit(t *testing.T) {
	raw := `func f() {\n\treturn \"x\" + y\\z\n}\u00e9 plain text that runs on for a while, longer than a word\r\n\/end`
	// The units of raw, decoded by hand.
	units := []string{}
	for i := 0; i < len(raw); i++ {
		if raw[i] != '\\' {
			units = append(units, raw[i:i+1])
			continue
		}
		switch raw[i+1] {
		case 'n':
			units = append(units, "\n")
		case 't':
			units = append(units, "\t")
		case 'r':
			units = append(units, "\r")
		case 'u':
			units = append(units, "é") // the one \u escape above
			i += 4
		default:
			units = append(units, raw[i+1:i+2])
		}
		i++
	}
	full := strings.Join(units, "")
	for limit := 0; limit <= len(full)+1; limit++ {
		var want strings.Builder
		for _, u := range units {
			if want.Len() >= limit {
				break
			}
			want.WriteString(u)
		}
		for name, s := range scanners([]byte(`["` + raw + `", 1]`)) {
			arr := s.Array()
			arr.Next()
			v, ok := s.StringPrefix(limit)
			if !ok || string(v) != want.String() {
				t.Fatalf("%s: StringPrefix(%d) = %q (%v), want %q", name, limit, v, ok, want.String())
			}
			if !arr.Next() {
				t.Fatalf("%s: limit %d: the string's rest was not skipped", name, limit)
			}
			if n, ok := s.Int(); !ok || n != 1 {
				t.Fatalf("%s: limit %d: next value %d %v", name, limit, n, ok)
			}
		}
	}
}
