// Package ampserver reads the user's Amp threads from the Amp server
// (ampcode.com) the way the Amp CLI does: POST {url}/api/internal?{method}
// with the user's API key and a {"ok", "result" | "error"} envelope
// (docs/formats/amp-server.md). Client is the transport; Syncer keeps the
// counting store in step with the account's threads.
package ampserver

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

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
		err := c.request(ctx, method, body, out)
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

// request makes one HTTP request of a call and reads its answer into out:
// nil, or the failure as an *Error (classify says which).
func (c *Client) request(ctx context.Context, method string, body []byte, out any) error {
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
	var why string
	e.kind, why = classify(reply{
		status:    resp.StatusCode,
		code:      e.Code,
		envelope:  envErr == nil && env.OK != nil,
		ok:        envErr == nil && env.OK != nil && *env.OK,
		resultErr: resultErr,
	})
	if e.kind == nil {
		if kept {
			keeper.keepBody(buf)
		}
		return nil
	}
	switch {
	case e.kind == ErrBadDocument:
		e.detail = "result: " + scrub(resultDetail, key)
	case why != "":
		e.detail = why
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
