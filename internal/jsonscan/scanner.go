// Package jsonscan is a streaming pull scanner for JSON documents that are
// mostly bulk the caller does not need.
//
// Amp thread files are ~87% string bytes (tool output, images, thinking),
// and decoding them whole with encoding/json runs at a twentieth of the speed
// of reading them. This scanner walks the structure through a fixed window
// over an io.Reader, hands out only the keys and scalars the caller asks for,
// and skips everything else: a string by finding its closing quote with
// bytes.IndexByte, and a value with escaped quotes in it by passing over
// whole 64-byte blocks with a vector kernel (skipBlocks). Memory stays
// bounded by the window whatever the file size.
//
// It is lenient about what it skips (an invalid escape inside a skipped
// string is not reported) and strict about structure it walks: a truncated
// document is always reported, so a half-written file is never mistaken for
// a complete one.
package jsonscan

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/bits"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"
)

// Kind is the type of the next JSON value.
type Kind byte

// The kinds of JSON values, and None for "no value here" (end of input or an
// error).
const (
	None Kind = iota
	Object
	Array
	String
	Number
	Bool
	Null
)

// ErrTruncated reports that the input ended inside a value: a file read while
// it was being written, or cut short.
var ErrTruncated = errors.New("unexpected end of JSON input")

// ErrTokenTooLong reports a key or kept scalar longer than the limit. Skipped
// values may be of any length.
var ErrTokenTooLong = errors.New("JSON token too long")

// SyntaxError is malformed JSON at a byte offset.
type SyntaxError struct {
	Offset int64
	Msg    string
}

func (e *SyntaxError) Error() string {
	return fmt.Sprintf("invalid JSON at byte %d: %s", e.Offset, e.Msg)
}

const (
	defaultWindow = 256 << 10
	// maxToken bounds what the scanner holds for the caller (keys, kept
	// strings, numbers); anything longer is an error, not an allocation.
	maxToken = 1 << 20
	maxDepth = 10000
)

// Scanner reads one JSON document. Methods return zero values once an error
// has occurred; check Err at the end. Byte slices returned by the scanner are
// valid only until its next call.
type Scanner struct {
	r       io.Reader
	buf     []byte // the window over r, or the whole in-memory document
	window  []byte // the scanner's own window, kept across Reset calls
	pos     int    // next unread byte in buf
	end     int    // end of valid data in buf
	base    int64  // input offset of buf[0]
	eof     bool
	err     error
	scratch []byte
	key     []byte
}

// New returns a scanner reading r through a window of the default size.
func New(r io.Reader) *Scanner {
	w := make([]byte, defaultWindow)
	return &Scanner{r: r, buf: w, window: w}
}

// NewBytes returns a scanner over an in-memory document.
func NewBytes(b []byte) *Scanner {
	s := &Scanner{}
	s.ResetBytes(b)
	return s
}

// Reset reuses the scanner (and its window) for a new reader.
func (s *Scanner) Reset(r io.Reader) {
	if len(s.window) < defaultWindow || len(s.window) > 4*defaultWindow {
		// A window grown for one long token is not kept for the next file.
		s.window = make([]byte, defaultWindow)
	}
	s.buf = s.window
	s.r, s.pos, s.end, s.base, s.eof, s.err = r, 0, 0, 0, false, nil
}

// ResetBytes reuses the scanner for an in-memory document, without copying it.
func (s *Scanner) ResetBytes(b []byte) {
	s.r, s.buf, s.pos, s.end, s.base, s.eof, s.err = nil, b, 0, len(b), 0, true, nil
}

// Err returns the first error met, or nil.
func (s *Scanner) Err() error { return s.err }

// Offset is the input offset of the next unread byte.
func (s *Scanner) Offset() int64 { return s.base + int64(s.pos) }

func (s *Scanner) fail(err error) {
	if s.err == nil {
		s.err = err
	}
	s.pos, s.end, s.eof = 0, 0, true
}

func (s *Scanner) syntax(msg string) {
	s.fail(&SyntaxError{Offset: s.Offset(), Msg: msg})
}

// fill reads more input, keeping buf[keep:end] (keep <= pos) in the window.
// It reports whether any new byte arrived.
func (s *Scanner) fill(keep int) bool {
	if s.eof || s.err != nil {
		return false
	}
	if keep > 0 {
		n := copy(s.buf, s.buf[keep:s.end])
		s.base += int64(keep)
		s.pos -= keep
		s.end = n
	}
	if s.end == len(s.buf) {
		if len(s.buf) >= maxToken+defaultWindow {
			s.fail(ErrTokenTooLong)
			return false
		}
		nb := make([]byte, 2*len(s.buf))
		copy(nb, s.buf[:s.end])
		s.buf, s.window = nb, nb
	}
	for {
		n, err := s.r.Read(s.buf[s.end:])
		s.end += n
		if err == io.EOF {
			s.eof = true
			return n > 0
		}
		if err != nil {
			s.fail(fmt.Errorf("read: %w", err))
			return false
		}
		if n > 0 {
			return true
		}
	}
}

// skipSpace advances past whitespace and reports whether a byte is available.
func (s *Scanner) skipSpace() bool {
	for {
		for s.pos < s.end {
			switch s.buf[s.pos] {
			case ' ', '\n', '\r', '\t':
				s.pos++
				// Pretty-printed files indent every line: take the run
				// of spaces eight bytes at a time.
				for s.pos+8 <= s.end {
					x := binary.LittleEndian.Uint64(s.buf[s.pos:]) ^ eightSpaces
					if x != 0 {
						s.pos += bits.TrailingZeros64(x) >> 3
						break
					}
					s.pos += 8
				}
			default:
				return true
			}
		}
		if !s.fill(s.pos) {
			return false
		}
	}
}

// Peek returns the kind of the next value without consuming it.
func (s *Scanner) Peek() Kind {
	if !s.skipSpace() {
		if s.err == nil {
			s.fail(ErrTruncated)
		}
		return None
	}
	switch c := s.buf[s.pos]; {
	case c == '{':
		return Object
	case c == '[':
		return Array
	case c == '"':
		return String
	case c == '-' || (c >= '0' && c <= '9'):
		return Number
	case c == 't' || c == 'f':
		return Bool
	case c == 'n':
		return Null
	default:
		s.syntax(fmt.Sprintf("unexpected character %q", c))
		return None
	}
}

// AtEOF reports whether only whitespace remains. Call it after the top-level
// value to reject trailing garbage.
func (s *Scanner) AtEOF() bool {
	if s.skipSpace() {
		return false
	}
	return s.err == nil
}

// Object iterates the members of an object value: call Next until it
// returns false; after each Next the caller must consume the member's value
// (read it or Skip it). A value that is not an object is skipped and yields
// no members.
func (s *Scanner) Object() ObjectIter {
	if s.Peek() != Object {
		s.Skip()
		return ObjectIter{s: s, done: true}
	}
	s.pos++
	return ObjectIter{s: s}
}

// ObjectIter walks the members of one object.
type ObjectIter struct {
	s     *Scanner
	done  bool
	begun bool
}

// Next advances to the next member and returns its key, decoded, valid until
// the next scanner call. It returns false at the end of the object or on
// error.
func (it *ObjectIter) Next() ([]byte, bool) {
	s := it.s
	if it.done || s.err != nil {
		return nil, false
	}
	if !s.skipSpace() {
		s.fail(ErrTruncated)
		return nil, false
	}
	c := s.buf[s.pos]
	if c == '}' {
		s.pos++
		it.done = true
		return nil, false
	}
	if it.begun {
		if c != ',' {
			s.syntax("expected ',' or '}' in object")
			return nil, false
		}
		s.pos++
		if !s.skipSpace() {
			s.fail(ErrTruncated)
			return nil, false
		}
	}
	it.begun = true
	if s.buf[s.pos] != '"' {
		s.syntax("expected string key in object")
		return nil, false
	}
	key := s.readString()
	if s.err != nil {
		return nil, false
	}
	if s.pos < s.end && s.buf[s.pos] == ':' {
		// The usual "key": — nothing can move the key before the caller's
		// next call.
		s.pos++
		return key, true
	}
	// The key must outlive the window refills that finding ':' may cause.
	s.key = append(s.key[:0], key...)
	if !s.skipSpace() {
		s.fail(ErrTruncated)
		return nil, false
	}
	if s.buf[s.pos] != ':' {
		s.syntax("expected ':' after object key")
		return nil, false
	}
	s.pos++
	return s.key, true
}

// Array iterates the elements of an array value, like Object; a value that
// is not an array is skipped and yields no elements.
func (s *Scanner) Array() ArrayIter {
	if s.Peek() != Array {
		s.Skip()
		return ArrayIter{s: s, done: true}
	}
	s.pos++
	return ArrayIter{s: s}
}

// ArrayIter walks the elements of one array.
type ArrayIter struct {
	s     *Scanner
	done  bool
	begun bool
}

// Next advances to the next element; the caller must consume it.
func (it *ArrayIter) Next() bool {
	s := it.s
	if it.done || s.err != nil {
		return false
	}
	if !s.skipSpace() {
		s.fail(ErrTruncated)
		return false
	}
	c := s.buf[s.pos]
	if c == ']' {
		s.pos++
		it.done = true
		return false
	}
	if it.begun {
		if c != ',' {
			s.syntax("expected ',' or ']' in array")
			return false
		}
		s.pos++
	}
	it.begun = true
	return true
}

// String returns the next value decoded if it is a string; any other value is
// skipped and ok is false. The slice is valid until the next scanner call.
func (s *Scanner) String() (v []byte, ok bool) {
	if s.Peek() != String {
		s.Skip()
		return nil, false
	}
	v = s.readString()
	return v, s.err == nil
}

// StringPrefix returns at most the first max decoded bytes of the next
// value if it is a string, skipping the rest of it without a length limit;
// any other value is skipped and ok is false. A prefix cut inside a UTF-8
// sequence may end with a partial rune.
func (s *Scanner) StringPrefix(max int) (v []byte, ok bool) {
	if s.Peek() != String {
		s.Skip()
		return nil, false
	}
	s.pos++
	v = s.decodeString(max)
	return v, s.err == nil
}

// Int returns the next value if it is a number that fits an int64 (a
// fraction is truncated); any other value is skipped and ok is false.
func (s *Scanner) Int() (int64, bool) {
	if s.Peek() != Number {
		s.Skip()
		return 0, false
	}
	tok := s.readNumber()
	if s.err != nil {
		return 0, false
	}
	if n, ok := smallInt(tok); ok {
		return n, true
	}
	if n, err := strconv.ParseInt(string(tok), 10, 64); err == nil {
		return n, true
	}
	f, err := strconv.ParseFloat(string(tok), 64)
	if err != nil || f != f || f > 9.2e18 || f < -9.2e18 {
		return 0, false
	}
	return int64(f), true
}

// smallInt decodes a valid number token of at most 18 digits without a
// fraction or exponent (token counts, ids, epoch milliseconds), which
// cannot overflow; anything else is left to strconv.
func smallInt(tok []byte) (int64, bool) {
	digits := tok
	if len(digits) > 0 && digits[0] == '-' {
		digits = digits[1:]
	}
	if len(digits) == 0 || len(digits) > 18 {
		return 0, false
	}
	var n int64
	for _, c := range digits {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int64(c-'0')
	}
	if len(digits) < len(tok) {
		n = -n
	}
	return n, true
}

// Float returns the next value if it is a number; any other value is skipped
// and ok is false.
func (s *Scanner) Float() (float64, bool) {
	if s.Peek() != Number {
		s.Skip()
		return 0, false
	}
	tok := s.readNumber()
	if s.err != nil {
		return 0, false
	}
	f, err := strconv.ParseFloat(string(tok), 64)
	return f, err == nil
}

// Bool returns the next value if it is true or false; any other value is
// skipped and ok is false.
func (s *Scanner) Bool() (v, ok bool) {
	if s.Peek() != Bool {
		s.Skip()
		return false, false
	}
	if s.buf[s.pos] == 't' {
		s.literal("true")
		return true, s.err == nil
	}
	s.literal("false")
	return false, s.err == nil
}

// Skip consumes the next value, whatever it is, without decoding it.
func (s *Scanner) Skip() {
	switch s.Peek() {
	case String:
		s.pos++
		s.skipStringBody()
	case Number:
		s.readNumber()
	case Bool:
		if s.buf[s.pos] == 't' {
			s.literal("true")
		} else {
			s.literal("false")
		}
	case Null:
		s.literal("null")
	case Object, Array:
		s.skipContainer(0)
	}
}

// SkipRest consumes the remaining members of the object and its closing
// brace, once the caller has what it needs from it. Call it in place of
// the next Next, after the last member read has been consumed.
func (it *ObjectIter) SkipRest() {
	if it.done || it.s.err != nil {
		return
	}
	it.done = true
	it.s.skipContainer(1)
}

func (s *Scanner) literal(want string) {
	for s.end-s.pos < len(want) {
		if !s.fill(s.pos) {
			s.fail(ErrTruncated)
			return
		}
	}
	if string(s.buf[s.pos:s.pos+len(want)]) != want {
		s.syntax("invalid literal")
		return
	}
	s.pos += len(want)
}

// readNumber consumes a number token and returns its bytes.
func (s *Scanner) readNumber() []byte {
	n := 0 // bytes of the token scanned so far, from pos
	for {
		for s.pos+n < s.end {
			c := s.buf[s.pos+n]
			if (c >= '0' && c <= '9') || c == '-' || c == '+' || c == '.' || c == 'e' || c == 'E' {
				n++
				continue
			}
			return s.takeNumber(n)
		}
		if !s.fill(s.pos) {
			if s.err != nil {
				return nil
			}
			return s.takeNumber(n)
		}
	}
}

func (s *Scanner) takeNumber(n int) []byte {
	tok := s.buf[s.pos : s.pos+n]
	if !validNumber(tok) {
		s.syntax("invalid number")
		return nil
	}
	s.pos += n
	return tok
}

func validNumber(b []byte) bool {
	i := 0
	if i < len(b) && b[i] == '-' {
		i++
	}
	if i == len(b) {
		return false
	}
	if b[i] == '0' {
		i++
	} else if b[i] >= '1' && b[i] <= '9' {
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
	} else {
		return false
	}
	if i < len(b) && b[i] == '.' {
		i++
		d := i
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
		if i == d {
			return false
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		d := i
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
		if i == d {
			return false
		}
	}
	return i == len(b)
}

// skipStringBody consumes a string whose opening quote is already consumed.
// Most strings end at their first quote, which bytes.IndexByte finds at
// memory speed; a string with an escaped quote before its end (code and
// JSON in tool output) goes to skipRest, whose block kernel does not stop
// at every escaped quote.
func (s *Scanner) skipStringBody() {
	seg := s.buf[s.pos:s.end]
	if i := bytes.IndexByte(seg, '"'); i >= 0 && trailingBackslashes(seg[:i])%2 == 0 {
		s.pos += i + 1
		return
	}
	s.skipRest(blockState{inString: true})
}

// skipRest consumes the rest of a value being skipped, st being the state at
// pos. skipBlocks passes over the 64-byte blocks in which the value cannot
// end; the block in which it may end, and a short tail, are walked here byte
// by byte, which is what decides where the value ends.
func (s *Scanner) skipRest(st blockState) {
	for {
		buf := s.buf[s.pos:s.end]
		i := skipBlocks(buf, &st)
		for end := min(len(buf), i+64); i < end; i++ {
			c := buf[i]
			if st.inString {
				switch {
				case st.escaped:
					st.escaped = false
				case c == '\\':
					st.escaped = true
				case c == '"':
					st.inString = false
					if st.depth == 0 {
						s.pos += i + 1
						return
					}
				}
				continue
			}
			switch c {
			case '"':
				st.inString = true
			case '{', '[':
				st.depth++
				if st.depth > maxDepth {
					s.pos += i + 1
					s.syntax("nesting too deep")
					return
				}
			case '}', ']':
				st.depth--
				if st.depth == 0 {
					s.pos += i + 1
					return
				}
			}
		}
		s.pos += i
		if s.pos == s.end && !s.fill(s.pos) {
			s.fail(ErrTruncated)
			return
		}
	}
}

func trailingBackslashes(b []byte) int {
	n := 0
	for j := len(b) - 1; j >= 0 && b[j] == '\\'; j-- {
		n++
	}
	return n
}

// skipContainer consumes an object or array (from its opening bracket, or
// from inside it with depth 1), counting brackets outside
// strings. Brackets are not matched by type: a skipped region only has to
// be balanced, which is all that is needed to find where it ends.
func (s *Scanner) skipContainer(depth int) {
	for {
		buf := s.buf[:s.end]
		i := s.pos
		for i < len(buf) {
			c := buf[i]
			i++
			if !structural[c] {
				if c == '\n' {
					for i+8 <= len(buf) && binary.LittleEndian.Uint64(buf[i:]) == eightSpaces {
						i += 8
					}
				}
				continue
			}
			switch c {
			case '"':
				// Most strings end at the first quote: find it inline.
				if j := bytes.IndexByte(buf[i:], '"'); j > 0 && buf[i+j-1] != '\\' {
					i += j + 1
					continue
				} else if j == 0 {
					i++
					continue
				}
				// A string with escaped quotes: from here on the
				// block kernel is faster than stopping at each of them.
				s.pos = i
				s.skipRest(blockState{depth: depth, inString: true})
				return
			case '{', '[':
				depth++
				if depth > maxDepth {
					s.pos = i
					s.syntax("nesting too deep")
					return
				}
			default: // '}', ']'
				depth--
				if depth == 0 {
					s.pos = i
					return
				}
			}
		}
		s.pos = i
		if !s.fill(s.pos) {
			s.fail(ErrTruncated)
			return
		}
	}
}

// structural marks the bytes skipContainer must look at; everything else
// (whitespace, scalars, commas, colons) is passed over.
const eightSpaces = 0x2020202020202020

var structural = [256]bool{'"': true, '{': true, '[': true, '}': true, ']': true}

// readString consumes a string at pos (on its opening quote) and returns it
// decoded. Strings without escapes that sit in the window are returned in
// place; others are decoded into scratch.
func (s *Scanner) readString() []byte {
	s.pos++
	i := s.pos
	for {
		// Kept strings are short (keys, models, statuses): look for a
		// quote or backslash eight bytes at a time, then byte by byte.
		for i+8 <= s.end {
			m := quoteOrBackslash(binary.LittleEndian.Uint64(s.buf[i:]))
			if m != 0 {
				i += bits.TrailingZeros64(m) >> 3
				break
			}
			i += 8
		}
		for ; i < s.end; i++ {
			switch s.buf[i] {
			case '"':
				if i-s.pos > maxToken {
					s.fail(ErrTokenTooLong)
					return nil
				}
				v := s.buf[s.pos:i]
				s.pos = i + 1
				return v
			case '\\':
				return s.readEscapedString()
			}
		}
		if i-s.pos > maxToken {
			s.fail(ErrTokenTooLong)
			return nil
		}
		scanned := i - s.pos
		if !s.fill(s.pos) {
			s.fail(ErrTruncated)
			return nil
		}
		i = s.pos + scanned
	}
}

// quoteOrBackslash has the high bit set in the lowest byte of x that is a
// quote or a backslash (higher bytes may be marked spuriously): the classic
// has-zero-byte test on x XOR each of them.
func quoteOrBackslash(x uint64) uint64 {
	const lo, hi = 0x0101010101010101, 0x8080808080808080
	q := x ^ (lo * '"')
	b := x ^ (lo * '\\')
	return ((q-lo)&^q | (b-lo)&^b) & hi
}

// readEscapedString decodes from pos (just after the opening quote) into
// scratch.
func (s *Scanner) readEscapedString() []byte {
	return s.decodeString(-1)
}

// decodeString decodes from pos (just after the opening quote) into
// scratch. With limit >= 0 it stops decoding once limit bytes are out and
// skips the rest of the string; otherwise a string past maxToken is an
// error.
func (s *Scanner) decodeString(limit int) []byte {
	out := s.scratch[:0]
	for {
		if limit >= 0 && len(out) >= limit {
			s.scratch = out
			s.skipStringBody() // pos is at a character boundary
			if s.err != nil {
				return nil
			}
			return out
		}
		if s.pos >= s.end {
			if !s.fill(s.pos) {
				s.fail(ErrTruncated)
				return nil
			}
		}
		c := s.buf[s.pos]
		switch {
		case c == '"':
			s.pos++
			s.scratch = out
			return out
		case c == '\\':
			for s.end-s.pos < 2 {
				if !s.fill(s.pos) {
					s.fail(ErrTruncated)
					return nil
				}
			}
			e := s.buf[s.pos+1]
			s.pos += 2
			switch e {
			case '"', '\\', '/':
				out = append(out, e)
			case 'b':
				out = append(out, '\b')
			case 'f':
				out = append(out, '\f')
			case 'n':
				out = append(out, '\n')
			case 'r':
				out = append(out, '\r')
			case 't':
				out = append(out, '\t')
			case 'u':
				r, ok := s.readHex4()
				if !ok {
					return nil
				}
				out = s.appendEscapedRune(out, r)
				if s.err != nil {
					return nil
				}
			default:
				s.syntax("invalid escape in string")
				return nil
			}
		default:
			// A run of plain bytes, copied at once: the strings decoded
			// whole (edit inputs) are code, mostly plain.
			n := plainRun(s.buf[s.pos:s.end])
			if limit >= 0 {
				n = min(n, limit-len(out))
			}
			out = append(out, s.buf[s.pos:s.pos+n]...)
			s.pos += n
		}
		if len(out) > maxToken {
			s.fail(ErrTokenTooLong)
			return nil
		}
	}
}

// plainRun is the length of b's prefix without a quote or backslash,
// looked for eight bytes at a time.
func plainRun(b []byte) int {
	i := 0
	for ; i+8 <= len(b); i += 8 {
		if m := quoteOrBackslash(binary.LittleEndian.Uint64(b[i:])); m != 0 {
			return i + bits.TrailingZeros64(m)>>3
		}
	}
	for ; i < len(b); i++ {
		if b[i] == '"' || b[i] == '\\' {
			return i
		}
	}
	return len(b)
}

func (s *Scanner) readHex4() (rune, bool) {
	for s.end-s.pos < 4 {
		if !s.fill(s.pos) {
			s.fail(ErrTruncated)
			return 0, false
		}
	}
	var r rune
	for _, c := range s.buf[s.pos : s.pos+4] {
		switch {
		case c >= '0' && c <= '9':
			c -= '0'
		case c >= 'a' && c <= 'f':
			c = c - 'a' + 10
		case c >= 'A' && c <= 'F':
			c = c - 'A' + 10
		default:
			s.syntax("invalid \\u escape")
			return 0, false
		}
		r = r*16 + rune(c)
	}
	s.pos += 4
	return r, true
}

// appendEscapedRune appends a \u escape's rune, pairing UTF-16 surrogates
// the way encoding/json does: a surrogate that does not pair becomes U+FFFD
// and the escape after it is read on its own.
func (s *Scanner) appendEscapedRune(out []byte, r rune) []byte {
	for {
		if !utf16.IsSurrogate(r) {
			return utf8.AppendRune(out, r)
		}
		if r >= 0xDC00 {
			return utf8.AppendRune(out, utf8.RuneError)
		}
		for s.end-s.pos < 2 {
			if !s.fill(s.pos) {
				return utf8.AppendRune(out, utf8.RuneError)
			}
		}
		if s.buf[s.pos] != '\\' || s.buf[s.pos+1] != 'u' {
			return utf8.AppendRune(out, utf8.RuneError)
		}
		s.pos += 2
		lo, ok := s.readHex4()
		if !ok {
			return out
		}
		if pair := utf16.DecodeRune(r, lo); pair != utf8.RuneError {
			return utf8.AppendRune(out, pair)
		}
		out = utf8.AppendRune(out, utf8.RuneError)
		r = lo
	}
}
