package ampserver

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"

	"github.com/amp-exporter/amp-exporter/internal/pool"
	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zstd"
)

// readBody reads a response body into a buffer of the pool (putBody),
// inflating gzip or zstd, bounded on the wire and decompressed: a gzip bomb
// is refused once MaxResponseBytes are inflated.
func (c *Client) readBody(resp *http.Response, method, key string) (*[]byte, error) {
	limit := c.opts.MaxResponseBytes
	wire := &countingReader{r: io.LimitReader(resp.Body, limit+1)}
	tooLarge := func() error {
		return &Error{Method: method, Status: resp.StatusCode, kind: ErrTooLarge, detail: fmt.Sprintf("more than %d bytes", limit)}
	}
	switch ce := strings.ToLower(strings.TrimSpace(resp.Header.Get("Content-Encoding"))); ce {
	case "", "identity":
	case "gzip", "x-gzip":
		return c.readGzip(resp, wire, method, key, tooLarge)
	case "zstd":
		// Several times faster to inflate than gzip, and smaller.
		return c.readZstd(resp, wire, method, key, tooLarge)
	default:
		return nil, &Error{Method: method, Status: resp.StatusCode, kind: ErrBadResponse, detail: "content encoding not asked for: " + bounded(ce, 32)}
	}
	const encoding = "identity"
	buf, readErr := readAll(io.LimitReader(wire, limit+1), sizeHint(resp.ContentLength, encoding, limit))
	n := int64(len(*buf))
	c.countBytes(encoding, wire.n, n)
	if n > limit || wire.n > limit {
		putBody(buf)
		return nil, tooLarge()
	}
	if readErr != nil {
		putBody(buf)
		return nil, &Error{Method: method, Status: resp.StatusCode, kind: ErrTransient, detail: scrub(urlErr(readErr), key)}
	}
	return buf, nil
}

// readCompressed reads a compressed answer whole into a buffer of the
// pool, bounded on the wire; the caller inflates it and returns the buffer.
func (c *Client) readCompressed(resp *http.Response, wire *countingReader, encoding, method, key string, tooLarge func() error) (*[]byte, error) {
	limit := c.opts.MaxResponseBytes
	src, err := readAll(wire, sizeHint(resp.ContentLength, "identity", limit))
	if wire.n > limit {
		putBody(src)
		c.countBytes(encoding, wire.n, 0)
		return nil, tooLarge()
	}
	if err != nil {
		putBody(src)
		c.countBytes(encoding, wire.n, 0)
		return nil, &Error{Method: method, Status: resp.StatusCode, kind: ErrTransient, detail: scrub(urlErr(err), key)}
	}
	return src, nil
}

// gzipReaders are reused: each holds a 32 KiB window and its tables.
var gzipReaders sync.Pool

// readGzip reads a gzip answer whole, then inflates it into a buffer of
// the pool sized by the size the gzip trailer gives (ISIZE, the inflated
// size modulo 4 GiB: a hint only, a wrong one costs a copy), so the
// buffer is not grown and copied as it fills.
func (c *Client) readGzip(resp *http.Response, wire *countingReader, method, key string, tooLarge func() error) (*[]byte, error) {
	const encoding = "gzip"
	limit := c.opts.MaxResponseBytes
	src, err := c.readCompressed(resp, wire, encoding, method, key, tooLarge)
	if err != nil {
		return nil, err
	}
	defer putBody(src)
	hint := sizeHint(int64(len(*src)), encoding, limit)
	if b := *src; len(b) >= 18 { // the smallest gzip member
		hint = min(int64(binary.LittleEndian.Uint32(b[len(b)-4:]))+1, limit+1)
	}
	zr, _ := gzipReaders.Get().(*gzip.Reader)
	in := bytes.NewReader(*src)
	if zr == nil {
		zr, err = gzip.NewReader(in)
	} else {
		err = zr.Reset(in)
	}
	if err != nil {
		c.countBytes(encoding, wire.n, 0)
		return nil, &Error{Method: method, Status: resp.StatusCode, kind: ErrTransient, detail: "gzip: " + scrub(err.Error(), key)}
	}
	buf, err := readAll(io.LimitReader(zr, limit+1), hint)
	_ = zr.Close()
	gzipReaders.Put(zr)
	n := int64(len(*buf))
	c.countBytes(encoding, wire.n, n)
	switch {
	case n > limit:
		putBody(buf)
		return nil, tooLarge()
	case err != nil:
		putBody(buf)
		return nil, &Error{Method: method, Status: resp.StatusCode, kind: ErrTransient, detail: "gzip: " + scrub(err.Error(), key)}
	}
	return buf, nil
}

// readZstd reads a zstd answer whole, then inflates it at once into a
// buffer of the pool (DecodeAll): a streaming decoder would inflate into
// its own window and copy every block out. The decoder refuses to inflate
// past MaxResponseBytes (checked block by block: at most one block of
// 128 KiB past the bound is inflated before the answer is refused).
func (c *Client) readZstd(resp *http.Response, wire *countingReader, method, key string, tooLarge func() error) (*[]byte, error) {
	const encoding = "zstd"
	limit := c.opts.MaxResponseBytes
	src, err := c.readCompressed(resp, wire, encoding, method, key, tooLarge)
	if err != nil {
		return nil, err
	}
	defer putBody(src)
	d := c.zstd.Get().(*zstd.Decoder)
	dst := getBody(sizeHint(int64(len(*src)), encoding, limit))
	out, err := d.DecodeAll(*src, (*dst)[:0])
	c.zstd.Put(d)
	*dst = out // grown, when it had to: the larger buffer goes to the pool
	n := int64(len(out))
	c.countBytes(encoding, wire.n, min(n, limit+1))
	switch {
	case errors.Is(err, zstd.ErrDecoderSizeExceeded) || n > limit:
		putBody(dst)
		return nil, tooLarge()
	case err != nil:
		putBody(dst)
		return nil, &Error{Method: method, Status: resp.StatusCode, kind: ErrTransient, detail: "zstd: " + scrub(err.Error(), key)}
	}
	return dst, nil
}

// sizeHint is the buffer a body is read into: its length when it is sent
// as is, four times it when compressed (thread JSON compresses three- to
// fivefold), 64 KiB when unknown; never more than the bound.
func sizeHint(contentLength int64, encoding string, limit int64) int64 {
	switch {
	case contentLength <= 0:
		return min(64<<10, limit+1)
	case encoding == "identity":
		return min(contentLength+1, limit+1)
	}
	return min(4*contentLength, limit+1)
}

// readAll is io.ReadAll into a buffer of the pool of capacity hint or
// more to start with.
func readAll(r io.Reader, hint int64) (*[]byte, error) {
	buf := getBody(max(hint, 512))
	b := *buf
	for {
		n, err := r.Read(b[len(b):cap(b)])
		b = b[:len(b)+n]
		if err != nil {
			if err == io.EOF {
				err = nil
			}
			*buf = b
			return buf, err
		}
		if len(b) == cap(b) {
			// Doubled: the copies add up to less than the body.
			nbuf := getBody(2 * int64(cap(b)))
			nb := append((*nbuf)[:0], b...)
			*buf = b
			putBody(buf)
			buf, b = nbuf, nb
		}
	}
}

// bodies are the buffers answers are read into, by size class from
// 64 KiB to 128 MiB (internal/pool says why they are pooled).
var bodies = pool.New(16, 27)

// getBody returns an empty buffer of capacity n or more.
func getBody(n int64) *[]byte { return bodies.Get(n) }

// putBody gives a buffer back to its pool; nothing may use its bytes
// after. nil is ignored.
func putBody(b *[]byte) { bodies.Put(b) }

// bodyKeeper is a result that keeps spans of the body it was read from
// (scanned thread tails and pages): it is given the body's buffer, to be
// given back once those spans are no longer used.
type bodyKeeper interface {
	keepBody(*[]byte)
}

func (c *Client) countBytes(encoding string, wire, decoded int64) {
	if c.opts.OnBytes != nil {
		c.opts.OnBytes(encoding, wire)
		c.opts.OnBytes("decoded", decoded)
	}
}

// countingReader counts the bytes read through it.
type countingReader struct {
	r io.Reader
	n int64
}

func (r *countingReader) Read(p []byte) (int, error) {
	n, err := r.r.Read(p)
	r.n += int64(n)
	return n, err
}
