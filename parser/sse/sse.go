// Package sse parses a Server-Sent Events stream (text/event-stream) into
// events, following the WHATWG HTML rules for interpreting an event stream:
// UTF-8 decoding with U+FFFD replacement and one leading BOM stripped,
// CRLF/LF/CR line ends, comments, the data/event/id/retry fields, and
// dispatch on a blank line.
//
// It is pure: it reads an io.Reader and returns events; no goroutines, no
// clock, no network. Memory is bounded by Options. Reconnection (and the
// Last-Event-ID header) is the caller's business.
//
// Choices the spec leaves to the implementation:
//
//   - A final line that is not terminated by a line end before EOF is
//     discarded unprocessed (it is not a complete line; browsers do the same),
//     so an "id:" there does not change LastEventID.
//   - A retry value too large for time.Duration saturates at the largest
//     Duration.
//   - A line (without its line end) longer than MaxLineBytes, or an event
//     whose Data would exceed MaxEventBytes, is an error that ends the parse:
//     the stream cannot be resynchronised without dropping data silently.
//   - After any error (including io.EOF) the Parser keeps returning it.
package sse

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"time"
	"unicode/utf8"
)

// Event is one dispatched event.
type Event struct {
	ID    string // the last event ID buffer at dispatch time ("" if never set)
	Event string // event type; "message" when the block had no event field (or an empty one)
	Data  string // data lines joined with "\n" (the final trailing "\n" removed)
	// Oversized is set, with Data empty, for an event dropped because it
	// exceeded MaxEventBytes or had a line longer than MaxLineBytes
	// (only with Options.SkipOversized).
	Oversized bool
}

// Options bounds the memory a stream can make the parser use.
type Options struct {
	MaxLineBytes  int // longest line accepted, line end excluded (default 1 MiB when <= 0)
	MaxEventBytes int // largest Data of one event, after UTF-8 repair (default 4 MiB when <= 0)
	// SkipOversized drops an event over the limits without holding it,
	// and dispatches it as an Event with Oversized set (its id and type
	// kept) at its blank line, instead of ending the parse: a reader that
	// resumes after it is not stopped by it again.
	SkipOversized bool
}

// Default limits.
const (
	DefaultMaxLineBytes  = 1 << 20
	DefaultMaxEventBytes = 4 << 20
)

// keepBufferCap: line and data buffers that grew beyond this for one big
// line or event are released once it is processed.
const keepBufferCap = 64 << 10

// readBufferSize is the size of the bufio.Reader: lines longer than this are
// assembled in a separate buffer (up to MaxLineBytes).
const readBufferSize = 32 << 10

// errLineSkipped: readLine dropped a line over MaxLineBytes (SkipOversized).
var errLineSkipped = errors.New("sse: line skipped")

var (
	// ErrLineTooLong: a line exceeded Options.MaxLineBytes. Returned wrapped
	// with the byte offset of the line.
	ErrLineTooLong = errors.New("sse: line too long")
	// ErrEventTooLarge: an event's data exceeded Options.MaxEventBytes.
	// Returned wrapped with the byte offset of the offending data line.
	ErrEventTooLarge = errors.New("sse: event too large")
)

// Parser reads events from one stream. It is not safe for concurrent use.
type Parser struct {
	br       *bufio.Reader
	maxLine  int
	maxEvent int
	skip     bool // Options.SkipOversized

	oversized  bool // the event being read is over the limits: its data is dropped
	discarding bool // the line being read is over MaxLineBytes: its bytes are dropped

	off        int64 // bytes consumed from br (BytesRead)
	lineStart  int64 // stream offset of the line being processed
	bomChecked bool  // the leading-BOM check was done
	skipLF     bool  // the last line ended with CR: an LF right after it is part of that line end
	lf, cr     byteScan
	win        []byte // the unconsumed part of what was Peeked from bufio
	winLen     int    // bytes Peeked, to Discard once win is consumed

	line      []byte // a line that spans several buffer fills
	data      []byte // data buffer (each data line followed by LF)
	eventType []byte // event type buffer
	id        []byte // last event ID buffer
	idStr     string // string(id), cached across events
	typeStr   string // the last non-default event type returned, cached

	retry    time.Duration
	retrySet bool
	comments int

	err error // sticky
}

// NewParser returns a Parser reading r.
func NewParser(r io.Reader, opts Options) *Parser {
	p := &Parser{
		br:       bufio.NewReaderSize(r, readBufferSize),
		maxLine:  opts.MaxLineBytes,
		maxEvent: opts.MaxEventBytes,
		skip:     opts.SkipOversized,
		lf:       byteScan{pos: -1},
		cr:       byteScan{pos: -1},
	}
	if p.maxLine <= 0 {
		p.maxLine = DefaultMaxLineBytes
	}
	if p.maxEvent <= 0 {
		p.maxEvent = DefaultMaxEventBytes
	}
	return p
}

// Next returns the next dispatched event, io.EOF at the end of the stream
// (a block not terminated by a blank line before EOF is not dispatched), or
// an error: a read error (wrapped), ErrLineTooLong or ErrEventTooLarge
// (wrapped). After an error the Parser is unusable and returns it again;
// the caller reconnects.
func (p *Parser) Next() (Event, error) {
	if p.err != nil {
		return Event{}, p.err
	}
	for {
		line, err := p.readLine()
		if errors.Is(err, errLineSkipped) {
			p.oversized = true
			continue
		}
		if err != nil {
			p.err = err
			return Event{}, err
		}
		if len(line) == 0 {
			if p.oversized {
				p.oversized = false
				p.data = p.data[:0]
				ev := Event{ID: p.idString(), Event: "message", Oversized: true}
				if len(p.eventType) > 0 {
					ev.Event = string(p.eventType)
				}
				p.eventType = p.eventType[:0]
				return ev, nil
			}
			if len(p.data) == 0 {
				p.eventType = p.eventType[:0]
				continue
			}
			return p.dispatch(), nil
		}
		if line[0] == ':' {
			p.comments++
			continue
		}
		if err := p.field(line); err != nil {
			p.err = err
			return Event{}, err
		}
	}
}

// LastEventID returns the last event ID buffer as it is now: it persists
// across events and is updated by id fields as soon as they are read, even
// in blocks that dispatch nothing or are not (yet) terminated.
//
// Note that the WHATWG EventSource sends as Last-Event-ID the value this
// buffer had at the last blank line; to resume after the last event really
// delivered, use the ID of the last Event returned.
func (p *Parser) LastEventID() string {
	return p.idString()
}

// Retry returns the reconnection time from the last valid retry field, and
// whether one was seen.
func (p *Parser) Retry() (time.Duration, bool) {
	return p.retry, p.retrySet
}

// Comments counts the comment lines (":" lines, e.g. keepalives) seen so far.
func (p *Parser) Comments() int {
	return p.comments
}

// BytesRead reports how many bytes of the stream have been consumed. At
// io.EOF it is the length of the stream.
func (p *Parser) BytesRead() int64 {
	return p.off
}

// sharedAllocMax: when the ID changed and Data is at most this long, ID and
// Data are cut from one string (one allocation instead of two); an ID kept
// by the caller then retains at most this much of its event's data.
const sharedAllocMax = 1 << 10

// dispatch builds the event from a non-empty data buffer and resets the
// data and event type buffers.
func (p *Parser) dispatch() Event {
	ev := Event{Event: "message"}
	n := len(p.data) - 1 // drop the trailing LF
	if n <= sharedAllocMax && string(p.id) != p.idStr {
		p.data = append(p.data[:n], p.id...)
		s := string(p.data)
		ev.Data, ev.ID = s[:n], s[n:]
		p.idStr = ev.ID
	} else {
		ev.Data, ev.ID = string(p.data[:n]), p.idString()
	}
	if len(p.eventType) > 0 {
		if string(p.eventType) != p.typeStr {
			p.typeStr = string(p.eventType)
		}
		ev.Event = p.typeStr
	}
	p.data = p.data[:0]
	if cap(p.data) > keepBufferCap {
		p.data = nil // do not hold a rare big event's buffer for the stream's life
	}
	p.eventType = p.eventType[:0]
	return ev
}

func (p *Parser) idString() string {
	if string(p.id) != p.idStr {
		p.idStr = string(p.id)
	}
	return p.idStr
}

// field processes a non-empty, non-comment line.
func (p *Parser) field(line []byte) error {
	// The known field names have at most 5 bytes, so only the first 6 bytes
	// are searched for the colon: if it is further (or absent from a longer
	// line), the field is unknown and ignored. This keeps long data lines
	// from being scanned twice.
	colon := -1
	for i, c := range line[:min(len(line), 6)] { // a loop beats IndexByte on 6 bytes
		if c == ':' {
			colon = i
			break
		}
	}
	var name, value []byte
	switch {
	case colon >= 0:
		name, value = line[:colon], line[colon+1:]
		if len(value) > 0 && value[0] == ' ' {
			value = value[1:]
		}
	case len(line) <= 5:
		name = line
	default:
		return nil
	}
	// Field names are compared as bytes: the known names are ASCII, and
	// invalid UTF-8 (which would decode to U+FFFD) never matches them.
	switch string(name) {
	case "data":
		if p.oversized {
			return nil
		}
		if utf8.Valid(value) {
			if len(p.data)+len(value) > p.maxEvent {
				return p.tooLarge()
			}
			p.data = append(p.data, value...)
		} else {
			p.data = appendUTF8(p.data, value)
			if len(p.data) > p.maxEvent {
				return p.tooLarge()
			}
		}
		p.data = append(p.data, '\n')
	case "event":
		p.eventType = appendUTF8(p.eventType[:0], value)
	case "id":
		if bytes.IndexByte(value, 0) < 0 {
			p.id = appendUTF8(p.id[:0], value)
		}
	case "retry":
		if ms, ok := parseRetry(value); ok {
			p.retry, p.retrySet = ms, true
		}
	}
	return nil
}

func (p *Parser) tooLarge() error {
	if p.skip {
		p.oversized = true
		p.data = p.data[:0]
		if cap(p.data) > keepBufferCap {
			p.data = nil
		}
		return nil
	}
	return fmt.Errorf("%w: data line at byte offset %d makes the event exceed %d bytes",
		ErrEventTooLarge, p.lineStart, p.maxEvent)
}

// parseRetry accepts a non-empty run of ASCII digits (milliseconds).
func parseRetry(v []byte) (time.Duration, bool) {
	if len(v) == 0 {
		return 0, false
	}
	const maxMs = math.MaxInt64 / int64(time.Millisecond)
	var ms int64
	for _, c := range v {
		if c < '0' || c > '9' {
			return 0, false
		}
		if ms <= maxMs {
			ms = ms*10 + int64(c-'0')
		}
	}
	if ms > maxMs {
		return time.Duration(math.MaxInt64), true
	}
	return time.Duration(ms) * time.Millisecond, true
}

// readLine returns the next complete line without its line end. The slice
// is valid until the next call. At the end of the stream it returns io.EOF
// (an unterminated last line is dropped); other errors are wrapped.
func (p *Parser) readLine() ([]byte, error) {
	if !p.bomChecked {
		if err := p.skipBOM(); err != nil {
			return nil, err
		}
	}
	p.line = p.line[:0]
	if cap(p.line) > keepBufferCap {
		p.line = nil
	}
	start := p.off
	for {
		if len(p.win) == 0 {
			// The window is consumed: tell bufio, and refill if it has
			// nothing more buffered.
			p.br.Discard(p.winLen)
			p.winLen = 0
			n := p.br.Buffered()
			if n == 0 {
				if _, err := p.br.Peek(1); err != nil {
					return nil, p.readErr(err)
				}
				n = p.br.Buffered()
			}
			p.win, _ = p.br.Peek(n)
			p.winLen = n
		}
		chunk := p.win
		if p.skipLF {
			p.skipLF = false
			if chunk[0] == '\n' {
				p.consume(1)
				start++
				continue
			}
		}
		i := p.findEOL(chunk)
		if i < 0 {
			if !p.discarding && len(p.line)+len(chunk) > p.maxLine {
				if !p.skip {
					return nil, p.tooLong(start)
				}
				p.discarding, p.line = true, nil
			}
			if !p.discarding {
				p.line = append(p.line, chunk...)
			}
			p.consume(len(chunk))
			continue
		}
		if p.discarding || len(p.line)+i > p.maxLine {
			if !p.skip {
				return nil, p.tooLong(start)
			}
			p.discarding, p.line = false, nil
			adv := i + 1
			if chunk[i] == '\r' {
				if i+1 < len(chunk) {
					if chunk[i+1] == '\n' {
						adv++
					}
				} else {
					p.skipLF = true
				}
			}
			p.consume(adv)
			p.lineStart = start
			return nil, errLineSkipped
		}
		line := chunk[:i]
		if len(p.line) > 0 {
			p.line = append(p.line, line...)
			line = p.line
		}
		adv := i + 1
		if chunk[i] == '\r' {
			if i+1 < len(chunk) {
				if chunk[i+1] == '\n' {
					adv++
				}
			} else {
				// The LF of a CRLF may be in the next read: decide when the
				// next line is read, so this line is not held back.
				p.skipLF = true
			}
		}
		// The bytes stay in bufio's buffer until the next refill, so line
		// is valid until the next readLine.
		p.consume(adv)
		p.lineStart = start
		return line, nil
	}
}

// skipBOM drops one U+FEFF (EF BB BF) at the very start of the stream. It
// peeks byte by byte so as not to wait for bytes a short first line lacks.
func (p *Parser) skipBOM() error {
	const bom = "\xEF\xBB\xBF"
	for k := 1; k <= len(bom); k++ {
		b, err := p.br.Peek(k)
		if err != nil {
			if err == io.EOF {
				break // the normal path consumes what is there and sees EOF
			}
			// Fewer than 3 bytes are buffered and none ends a line: nothing
			// that could have been dispatched is lost.
			return p.readErr(err)
		}
		if b[k-1] != bom[k-1] {
			break
		}
		if k == len(bom) {
			p.br.Discard(len(bom))
			p.off += int64(len(bom))
		}
	}
	p.bomChecked = true
	return nil
}

// consume marks n bytes of the window read; bufio is told at the next refill.
func (p *Parser) consume(n int) {
	p.win = p.win[n:]
	p.off += int64(n)
}

func (p *Parser) readErr(err error) error {
	if err == io.EOF {
		return io.EOF
	}
	return fmt.Errorf("sse: read error after %d bytes: %w", p.off, err)
}

func (p *Parser) tooLong(start int64) error {
	return fmt.Errorf("%w: line at byte offset %d is longer than %d bytes",
		ErrLineTooLong, start, p.maxLine)
}

// findEOL returns the index in chunk (which starts at stream offset p.off)
// of the first CR or LF, or -1.
func (p *Parser) findEOL(chunk []byte) int {
	lf := p.lf.next(chunk, p.off, '\n')
	cr := p.cr.next(chunk, p.off, '\r')
	if cr >= 0 && (lf < 0 || cr < lf) {
		return cr
	}
	return lf
}

// byteScan remembers where the next occurrence of a byte is in the stream
// (or how far it is known to be absent), so each buffered byte is scanned
// at most once for it: an LF-only stream does not rescan every line for a
// CR, nor a CR-only stream the whole buffer for an LF.
type byteScan struct {
	pos  int64 // stream offset of the next occurrence, valid when >= the current offset
	none int64 // no occurrence in [current offset, none)
}

// next returns the index in chunk (at stream offset off) of the first c, or
// -1. The bytes buffered only grow at the end until consumed, so what was
// learnt about earlier chunks stays true.
func (s *byteScan) next(chunk []byte, off int64, c byte) int {
	if s.pos >= off {
		return int(s.pos - off)
	}
	from := 0
	if s.none > off {
		from = int(s.none - off)
	}
	if k := bytes.IndexByte(chunk[from:], c); k >= 0 {
		s.pos = off + int64(from+k)
		return from + k
	}
	s.none = off + int64(len(chunk))
	return -1
}

// appendUTF8 appends src to dst, replacing invalid UTF-8 the way the WHATWG
// UTF-8 decoder does: each maximal subpart of an ill-formed sequence becomes
// one U+FFFD (so "\xE2\x82A" gives "\uFFFDA", and a surrogate "\xED\xA0\x80"
// three U+FFFD).
func appendUTF8(dst, src []byte) []byte {
	if utf8.Valid(src) {
		return append(dst, src...)
	}
	for len(src) > 0 {
		if src[0] < utf8.RuneSelf {
			dst = append(dst, src[0])
			src = src[1:]
			continue
		}
		r, size := utf8.DecodeRune(src)
		if r != utf8.RuneError || size > 1 {
			dst = append(dst, src[:size]...)
			src = src[size:]
			continue
		}
		dst = append(dst, "\uFFFD"...)
		src = src[invalidPrefixLen(src):]
	}
	return dst
}

// invalidPrefixLen returns the length of the maximal subpart of the
// ill-formed sequence at the start of s (at least 1).
func invalidPrefixLen(s []byte) int {
	lo, hi := byte(0x80), byte(0xBF)
	need := 0
	switch b := s[0]; {
	case b >= 0xC2 && b <= 0xDF:
		need = 1
	case b == 0xE0:
		need, lo = 2, 0xA0
	case b == 0xED:
		need, hi = 2, 0x9F
	case b >= 0xE1 && b <= 0xEF:
		need = 2
	case b == 0xF0:
		need, lo = 3, 0x90
	case b >= 0xF1 && b <= 0xF3:
		need = 3
	case b == 0xF4:
		need, hi = 3, 0x8F
	default:
		return 1
	}
	i := 1
	for ; i <= need && i < len(s); i++ {
		if c := s[i]; c < lo || c > hi {
			break
		}
		lo, hi = 0x80, 0xBF
	}
	return i
}
