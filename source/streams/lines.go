// Package streams brings Amp --stream-json lines to the stream store: it
// tails directories of captures and serves the ingest endpoint.
package streams

import (
	"bufio"
	"bytes"
	"errors"
	"io"
)

// scanLines calls fn for every complete line read from br (without its
// line end, LF or CRLF) and returns how many bytes those lines took. A line
// longer than maxLine is not held in memory: fn gets it empty with
// tooLong set. A last line without a newline is passed on only when
// takeUnterminated is set (a request body ends its last line; a file being
// appended to does not), and otherwise left unconsumed.
func scanLines(br *bufio.Reader, maxLine int, takeUnterminated bool, fn func(line []byte, tooLong bool)) (int64, error) {
	var (
		consumed  int64
		own       []byte // a line that spans reads, copied out of br
		lineBytes int
		tooLong   bool
	)
	for {
		chunk, err := br.ReadSlice('\n')
		first := lineBytes == 0
		lineBytes += len(chunk)
		if !tooLong && lineBytes > maxLine+2 { // +2: room for the line end
			tooLong, own = true, own[:0]
		}
		if !tooLong && !(first && err == nil) {
			own = appendBounded(own, chunk, maxLine+2)
		}
		switch {
		case err == nil:
			line := own
			if first {
				line = chunk // the whole line sits in br's buffer: no copy
			}
			if tooLong {
				line = nil
			}
			fn(trimEOL(line), tooLong)
			consumed += int64(lineBytes)
			own, lineBytes, tooLong = own[:0], 0, false
			if cap(own) > keepLineCap {
				own = nil // do not hold one big line's buffer for the stream's life
			}
		case errors.Is(err, bufio.ErrBufferFull):
			// the line goes on in the next read
		case errors.Is(err, io.EOF):
			if lineBytes > 0 && takeUnterminated {
				line := own
				if tooLong {
					line = nil
				}
				fn(trimEOL(line), tooLong)
				consumed += int64(lineBytes)
			}
			return consumed, nil
		default:
			return consumed, err
		}
	}
}

// keepLineCap: a line buffer grown past this for one long line is released
// once that line is processed.
const keepLineCap = 64 << 10

// appendBounded appends like append, but never grows dst's capacity past
// limit (append doubles, so a line of maxLine bytes could otherwise hold
// twice that): the memory of one line is bounded by the line limit.
func appendBounded(dst, src []byte, limit int) []byte {
	need := len(dst) + len(src)
	if need <= cap(dst) {
		return append(dst, src...)
	}
	newCap := max(2*cap(dst), need, 4096)
	if newCap > limit {
		newCap = max(limit, need)
	}
	out := make([]byte, len(dst), newCap)
	copy(out, dst)
	return append(out, src...)
}

func trimEOL(b []byte) []byte {
	b = bytes.TrimSuffix(b, []byte("\n"))
	return bytes.TrimSuffix(b, []byte("\r"))
}
