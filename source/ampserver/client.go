// Package ampserver reads the user's Amp threads from the Amp server
// (ampcode.com) the way the Amp CLI does: POST {url}/api/internal?{method}
// with the user's API key and a {"ok", "result" | "error"} envelope
// (docs/formats/amp-server.md). Client is the transport; Syncer keeps the
// counting store in step with the account's threads.
package ampserver

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zstd"
	promconfig "github.com/prometheus/common/config"
)

// Method names of the internal API.
const (
	MethodGetUserInfo           = "getUserInfo"
	MethodListThreads           = "listThreads"
	MethodGetThreadTail         = "getThreadTail"
	MethodGetThread             = "getThread"
	MethodGetThreadMessagesPage = "getThreadMessagesPage"
	MethodThreadDisplayCostInfo = "threadDisplayCostInfo"
)

// Methods lists every method the exporter calls, for metrics that start at
// zero.
var Methods = []string{MethodGetUserInfo, MethodListThreads, MethodGetThreadTail, MethodGetThreadMessagesPage, MethodThreadDisplayCostInfo}

// Sentinel errors, matched with errors.Is.
var (
	// ErrAuth: the key is not accepted (HTTP 401/403 or auth-required).
	// Retrying soon will not help.
	ErrAuth = errors.New("amp server: API key not accepted")
	// ErrThreadNotFound: the thread is gone (deleted between list and
	// fetch).
	ErrThreadNotFound = errors.New("amp server: thread not found")
	// ErrTooLarge: a response exceeded the size limit.
	ErrTooLarge = errors.New("amp server: response too large")
	// ErrBadResponse: the reply is not the envelope, or a refusal
	// without a usable error code.
	ErrBadResponse = errors.New("amp server: unreadable response")
	// ErrBadDocument: an {ok: true} answer whose result is not the shape
	// the CLI reads (a thread's data that is not an object, pages that do
	// not continue where the last ended): the document is there and
	// cannot be read.
	ErrBadDocument = errors.New("amp server: result not understood")
	// ErrTransient: a failure worth retrying (5xx, internal-error,
	// network).
	ErrTransient = errors.New("amp server: temporary failure")
	// ErrRateLimited: rate-limit-exceeded or HTTP 429; the server wants
	// fewer requests for RetryAfter. It is also an ErrTransient.
	ErrRateLimited = errors.New("amp server: rate limited")
	// ErrInvalidArgument: the server says the request is wrong
	// (invalid-argument): a bug of the exporter or a change of the API,
	// not worth a retry soon.
	ErrInvalidArgument = errors.New("amp server: request refused as invalid")
)

// Error is a failed call. It never carries the API key.
type Error struct {
	Method string
	Status int    // HTTP status; 0 for a network failure
	Code   string // the envelope's error code, when there is one
	// RetryAfter is the server's Retry-After, already capped; 0 if none.
	RetryAfter time.Duration
	kind       error
	detail     string
	// otherKey: the key was refused and the key source has another now.
	otherKey bool
}

func (e *Error) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s: %v", e.Method, e.kind)
	if e.Status != 0 {
		fmt.Fprintf(&b, " (HTTP %d", e.Status)
		if e.Code != "" {
			fmt.Fprintf(&b, ", %s", e.Code)
		}
		b.WriteString(")")
	} else if e.Code != "" {
		fmt.Fprintf(&b, " (%s)", e.Code)
	}
	if e.detail != "" {
		b.WriteString(": ")
		b.WriteString(e.detail)
	}
	return b.String()
}

// Unwrap lets errors.Is match the sentinel (a rate limit is transient
// too).
func (e *Error) Unwrap() []error {
	if e.kind == ErrRateLimited {
		return []error{e.kind, ErrTransient}
	}
	return []error{e.kind}
}

// DefaultURL is the Amp server.
const DefaultURL = "https://ampcode.com/"

// Options configures a Client.
type Options struct {
	// URL of the Amp server; DefaultURL when empty.
	URL string
	// Key returns the API key; it is called for every request, so a key
	// file that is rotated is picked up.
	Key func() (string, error)
	// Keys, when set, replaces Key: it is asked for the key of every
	// request and told when the server refuses one (an OAuth login of the
	// Amp CLI is refreshed through it).
	Keys KeySource
	// HTTP holds proxy and TLS settings.
	HTTP promconfig.HTTPClientConfig
	// Version goes into the User-Agent.
	Version string
	// Timeout bounds one request (default 2m).
	Timeout time.Duration
	// MaxResponseBytes bounds one response body, decompressed and on the
	// wire (default 64 MiB).
	MaxResponseBytes int64
	// Retries of transient failures within one call (default 3).
	Retries int
	// MaxRetryAfter caps the server's Retry-After (default 1m).
	MaxRetryAfter time.Duration
	// Backoff is the first delay of the exponential backoff (default 1s).
	Backoff time.Duration
	// Sleep waits (tests make it instant); default a timer honouring ctx.
	Sleep func(ctx context.Context, d time.Duration) error
	// OnRequest is called once per HTTP request with the method and the
	// status code ("error" for a network failure).
	OnRequest func(method, code string)
	// OnBytes is called for every response body read: with its size on
	// the wire by content encoding ("gzip", "identity"), then with its
	// decompressed size ("decoded").
	OnBytes func(encoding string, n int64)
	// Transport replaces the transport built from HTTP (tests).
	Transport http.RoundTripper
}

// Client calls the Amp internal API. It is safe for concurrent use.
type Client struct {
	endpoint *url.URL
	opts     Options
	hc       *http.Client
	// zstd are reused zstd decoders, bounded by opts.MaxResponseBytes: a
	// zstd decoder is costly to make.
	zstd sync.Pool
}

// NewClient checks the options and builds the HTTP client.
func NewClient(opts Options) (*Client, error) {
	if opts.URL == "" {
		opts.URL = DefaultURL
	}
	u, err := url.Parse(opts.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("amp server url %q: want an http:// or https:// URL", opts.URL)
	}
	if u.User != nil {
		return nil, errors.New("amp server url: credentials do not belong in the URL")
	}
	if opts.Key == nil && opts.Keys == nil {
		return nil, errors.New("amp server: no API key")
	}
	if opts.Timeout <= 0 {
		opts.Timeout = 2 * time.Minute
	}
	if opts.MaxResponseBytes <= 0 {
		opts.MaxResponseBytes = 64 << 20
	}
	if opts.Retries < 0 {
		opts.Retries = 0
	} else if opts.Retries == 0 {
		opts.Retries = 3
	}
	if opts.MaxRetryAfter <= 0 {
		opts.MaxRetryAfter = time.Minute
	}
	if opts.Backoff <= 0 {
		opts.Backoff = time.Second
	}
	if opts.Sleep == nil {
		opts.Sleep = sleep
	}
	if opts.Version == "" {
		opts.Version = "devel"
	}
	var hc *http.Client
	if opts.Transport != nil {
		hc = &http.Client{Transport: opts.Transport}
	} else {
		if err := opts.HTTP.Validate(); err != nil {
			return nil, fmt.Errorf("amp server http settings: %w", err)
		}
		hc, err = promconfig.NewClientFromConfig(opts.HTTP, "amp_server")
		if err != nil {
			return nil, fmt.Errorf("amp server http settings: %w", err)
		}
	}
	// Redirects would carry the bearer key to wherever they point.
	hc.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	if !strings.HasSuffix(u.Path, "/") {
		u.Path += "/"
	}
	c := &Client{endpoint: u.JoinPath("api", "internal"), opts: opts, hc: hc}
	c.zstd.New = func() any {
		// Their window and what they inflate to are bounded (a peer
		// chooses both), and they decode on the caller's goroutine.
		d, err := zstd.NewReader(nil, zstd.WithDecoderConcurrency(1), zstd.WithDecoderMaxWindow(64<<20),
			zstd.WithDecoderLowmem(true), zstd.WithDecoderMaxMemory(uint64(opts.MaxResponseBytes)))
		if err != nil {
			panic(err) // only for bad options
		}
		return d
	}
	return c, nil
}

// URL is the server's base URL, for logs (it carries no credentials).
func (c *Client) URL() string { return c.opts.URL }

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// Call invokes method with params and decodes its result into out,
// retrying transient failures (rate limits included) with backoff, and
// classifies failures by the envelope's error code on any HTTP status.
// ErrAuth, ErrThreadNotFound, ErrInvalidArgument, ErrTooLarge,
// ErrBadResponse and ErrBadDocument are returned at once.
func (c *Client) Call(ctx context.Context, method string, params, out any) error {
	if params == nil {
		params = struct{}{}
	}
	body, err := json.Marshal(struct {
		Method string `json:"method"`
		Params any    `json:"params"`
	}{method, params})
	if err != nil {
		return fmt.Errorf("%s: encode params: %w", method, err)
	}
	delay := c.opts.Backoff
	keyRetried := false
	for attempt := 0; ; attempt++ {
		err := c.once(ctx, method, body, out)
		var e *Error
		if errors.As(err, &e) && e.otherKey && !keyRetried {
			keyRetried = true // the login changed since the key was read: once more at once
			attempt--
			continue
		}
		if err == nil || !errors.As(err, &e) || !errors.Is(err, ErrTransient) || attempt >= c.opts.Retries {
			// ErrTransient includes ErrRateLimited.
			return err
		}
		wait := e.RetryAfter
		if wait == 0 {
			// Exponential backoff with full jitter over the upper half.
			wait = delay/2 + rand.N(delay/2+1)
			delay = min(2*delay, c.opts.MaxRetryAfter)
		}
		if err := c.opts.Sleep(ctx, wait); err != nil {
			return fmt.Errorf("%s: %w", method, err)
		}
	}
}

func (c *Client) once(ctx context.Context, method string, body []byte, out any) error {
	key, err := c.apiKey(ctx)
	if err != nil {
		if ctx.Err() != nil {
			return fmt.Errorf("%s: %w", method, ctx.Err())
		}
		kind := ErrAuth
		if errors.Is(err, ErrTransient) { // a login that could not be refreshed yet
			kind = ErrTransient
		}
		return &Error{Method: method, kind: kind, detail: "cannot read the API key: " + scrub(err.Error(), "")}
	}
	parent := ctx
	ctx, cancel := context.WithTimeout(ctx, c.opts.Timeout)
	defer cancel()
	u := *c.endpoint
	u.RawQuery = url.QueryEscape(method)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u.String(), bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("%s: %w", method, err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	// Set here, so the transport leaves the body compressed: its size on
	// the wire is counted and the bound applies to what it inflates to.
	req.Header.Set("Accept-Encoding", "zstd, gzip")
	req.Header.Set("User-Agent", "amp-exporter/"+c.opts.Version)
	req.Header.Set("Authorization", "Bearer "+key)
	resp, err := c.hc.Do(req)
	if err != nil {
		c.report(method, "error")
		if parent.Err() != nil {
			return fmt.Errorf("%s: %w", method, parent.Err())
		}
		if ctx.Err() != nil {
			return &Error{Method: method, kind: ErrTransient, detail: "timed out"}
		}
		return &Error{Method: method, kind: ErrTransient, detail: scrub(urlErr(err), key)}
	}
	defer resp.Body.Close()
	c.report(method, strconv.Itoa(resp.StatusCode))
	buf, err := c.readBody(resp, method, key)
	if err != nil {
		return err
	}
	data := *buf
	// The body's buffer goes back to the pool once decoded, unless the
	// result keeps spans of it (thread tails and pages, scanned): then
	// it is the result's, and goes back when the thread is counted
	// (Export.Release); after a failure (a result another attempt may
	// not overwrite whole) it is left to the garbage collector.
	keeper, kept := out.(bodyKeeper)
	defer func() {
		if !kept {
			putBody(buf)
		}
	}()
	// The result is decoded straight into out, in the same pass as the
	// envelope: thread pages are most of the bytes read, and each extra
	// pass over them costs as much as the decoding.
	if out == nil {
		out = new(json.RawMessage)
	}
	env := envelope{Result: out}
	var envErr error
	var resultErr bool // the envelope decoded; the result has another shape
	var resultDetail string
	if sr, ok := out.(scannedResult); ok {
		resultErr, resultDetail, envErr = env.scan(data, sr)
	} else {
		envErr = json.Unmarshal(data, &env)
		var typeErr *json.UnmarshalTypeError
		if resultErr = errors.As(envErr, &typeErr); resultErr {
			envErr, resultDetail = nil, typeErr.Error()
		}
	}
	e := &Error{Method: method, Status: resp.StatusCode}
	var retryAfterBody *float64
	if envErr == nil && env.Error != nil {
		// Scrubbed before it is cut: a key across the cut would
		// otherwise be left half in.
		e.Code = bounded(scrub(env.Error.Code, key), 64)
		e.detail = bounded(scrub(env.Error.Message, key), 200)
		retryAfterBody = env.Error.RetryAfterSeconds
	}
	if envErr == nil && retryAfterBody == nil {
		retryAfterBody = env.RetryAfterSeconds
	}
	ok2xx := resp.StatusCode >= 200 && resp.StatusCode <= 299
	// The envelope's code decides, on any status (2xx included); the
	// status only where there is no code the exporter knows.
	switch e.Code {
	case "auth-required", "permission-denied":
		e.kind = ErrAuth
	case "thread-not-found":
		e.kind = ErrThreadNotFound
	case "rate-limit-exceeded":
		e.kind = ErrRateLimited
	case "internal-error":
		e.kind = ErrTransient
	case "invalid-argument":
		e.kind = ErrInvalidArgument
	default:
		switch {
		case resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden:
			e.kind = ErrAuth
		case resp.StatusCode == http.StatusTooManyRequests:
			e.kind = ErrRateLimited
		case resp.StatusCode >= 300 && resp.StatusCode <= 399:
			// A redirect is not followed (it would carry the key).
			e.kind = ErrBadResponse
		case !ok2xx:
			// No usable code: back off and try again.
			e.kind = ErrTransient
		case envErr != nil || env.OK == nil:
			e.kind = ErrBadResponse
			e.detail = "not an {ok, result} envelope"
		case !*env.OK:
			e.kind = ErrBadResponse
			if e.Code == "" {
				e.detail = "ok is false without an error"
			}
		case resultErr:
			e.kind = ErrBadDocument
			e.detail = "result: " + scrub(resultDetail, key)
		default:
			if kept {
				keeper.keepBody(buf)
			}
			return nil
		}
	}
	if e.kind == ErrAuth {
		// A login replaced since this key was read (amp login elsewhere, a
		// refresh by another process) is tried once more at once.
		e.otherKey = c.opts.Keys != nil && c.opts.Keys.Refused(key)
	}
	if e.kind == ErrRateLimited || resp.StatusCode == http.StatusServiceUnavailable {
		e.RetryAfter = retryAfter(resp.Header.Get("Retry-After"), time.Now(), c.opts.MaxRetryAfter)
		if e.RetryAfter == 0 && retryAfterBody != nil && *retryAfterBody > 0 {
			// Capped before it is converted: a huge number of seconds
			// would overflow into a negative wait (no back-off at all).
			e.RetryAfter = c.opts.MaxRetryAfter
			if *retryAfterBody < c.opts.MaxRetryAfter.Seconds() {
				e.RetryAfter = time.Duration(*retryAfterBody * float64(time.Second))
			}
		}
	}
	return e
}

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

// Bodies are read into buffers kept in pools by size class (powers of two
// from minPooled to maxPooled): a first sync reads a gigabyte in a few
// thousand answers, and allocating (and zeroing) a buffer for each, then
// collecting it, cost about as much as scanning them. A buffer in a pool
// is dropped by the garbage collector when it has not been used for two
// collections, so a large answer does not pin its buffer for good.
const (
	minPooledShift = 16 // 64 KiB
	maxPooledShift = 27 // 128 MiB
)

var bodyPools [maxPooledShift - minPooledShift + 1]sync.Pool

// scribbleReleased (tests) overwrites a buffer given back, so that a use
// after its release reads garbage, not by chance the right bytes.
var scribbleReleased atomic.Bool

// bodyClass is the pool of buffers of at least n bytes, or -1 when n is
// larger than any.
func bodyClass(n int64) int {
	for c := range bodyPools {
		if n <= 1<<(minPooledShift+c) {
			return c
		}
	}
	return -1
}

// getBody returns an empty buffer of capacity n or more.
func getBody(n int64) *[]byte {
	c := bodyClass(n)
	if c < 0 {
		b := make([]byte, 0, n)
		return &b
	}
	if b, ok := bodyPools[c].Get().(*[]byte); ok {
		*b = (*b)[:0]
		return b
	}
	b := make([]byte, 0, 1<<(minPooledShift+c))
	return &b
}

// putBody gives a buffer back to its pool; nothing may use its bytes
// after. nil is ignored.
func putBody(b *[]byte) {
	if b == nil {
		return
	}
	if scribbleReleased.Load() {
		for i := range *b {
			(*b)[i] = 'X'
		}
	}
	// The class whose buffers it can stand in for: its capacity or less.
	for c := len(bodyPools) - 1; c >= 0; c-- {
		if cap(*b) >= 1<<(minPooledShift+c) {
			bodyPools[c].Put(b)
			return
		}
	}
}

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

func (c *Client) apiKey(ctx context.Context) (string, error) {
	if c.opts.Keys != nil {
		return c.opts.Keys.APIKey(ctx)
	}
	return c.opts.Key()
}

func (c *Client) report(method, code string) {
	if c.opts.OnRequest != nil {
		c.opts.OnRequest(method, code)
	}
}

// urlErr drops the URL from a *url.Error (it is ours and long).
func urlErr(err error) string {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err.Error()
	}
	return err.Error()
}

// scrub removes the key from text that came from elsewhere.
func scrub(s, key string) string {
	if key != "" && len(key) >= 4 {
		s = strings.ReplaceAll(s, key, "<secret>")
	}
	return s
}

func bounded(s string, n int) string {
	if len(s) > n {
		s = s[:n] + "…"
	}
	return strings.ToValidUTF8(s, "?")
}

// retryAfter parses a Retry-After header (seconds or an HTTP date), capped.
func retryAfter(h string, now time.Time, limit time.Duration) time.Duration {
	h = strings.TrimSpace(h)
	if h == "" {
		return 0
	}
	var d time.Duration
	if n, err := strconv.ParseInt(h, 10, 64); err == nil {
		if n < 0 {
			return 0
		}
		if n > int64(limit/time.Second) {
			return limit
		}
		d = time.Duration(n) * time.Second
	} else if t, err := http.ParseTime(h); err == nil {
		d = t.Sub(now)
	}
	return min(max(d, 0), limit)
}
