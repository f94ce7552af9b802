package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	promconfig "github.com/prometheus/common/config"

	"github.com/amp-exporter/amp-exporter/internal/clock"
)

// The bounds of an answer's body, per endpoint (Options.Limits changes
// them): a page of 100 threads is tens of KiB, a thread's usage a few
// KiB, a year of a large workspace's rollup tens of MiB.
const (
	MaxListingBytes = 16 << 20
	MaxUsageBytes   = 1 << 20
	MaxDailyBytes   = 64 << 20
	// maxErrorBytes bounds an error answer read for its message.
	maxErrorBytes = 4 << 10
)

// Scopes the endpoints need.
const (
	ScopeThreadsMeta = "amp.api:workspace.threads.meta:view"
	ScopeAnalytics   = "amp.api:workspace.analytics:view"
)

// Limits bound the answers' bodies in bytes; zero takes the default.
type Limits struct{ Listing, Usage, Daily int64 }

// ListingParams are the names of the listing's query parameters; an empty
// Sort sends no sort.
type ListingParams struct{ Cursor, After, Before, Sort string }

// Hooks let the caller count what the client does; any may be nil.
type Hooks struct {
	// Request: one per HTTP request, with its status code ("error" when
	// no answer came).
	Request func(endpoint, code string)
	// Bytes: the size of each answer's body read.
	Bytes func(endpoint string, n int64)
	// Anomaly: n answers' parts of an unexpected shape.
	Anomaly func(endpoint, reason string, n int)
	// Shape: everything a decoder saw in a 200 answer (the check shows
	// it).
	Shape func(endpoint string, s *Shape)
}

// Options configure a Client.
type Options struct {
	APIURL, TokenURL       string
	ClientID, ClientSecret string
	ClientAuth             string // AuthBasic (default) or AuthPost
	Resource               string
	Scopes                 []string
	MaxRequestsPerMinute   int // default 120
	Params                 ListingParams
	HTTP                   promconfig.HTTPClientConfig
	// Transport replaces the transport built from HTTP (tests); the GET
	// guard wraps it all the same.
	Transport http.RoundTripper
	Clock     clock.Clock
	Hooks     Hooks
	Version   string
	Limits    Limits
	// MaxAttempts bounds the tries of one request on 429, 5xx and
	// network errors (default 5).
	MaxAttempts int
	// Backoff is the first wait after a 5xx or network error, doubled each
	// time up to MaxBackoff (defaults 500ms, 1m), with jitter.
	Backoff, MaxBackoff time.Duration
	// RateLimitBackoff is the first wait after a 429 without Retry-After
	// (default 10s), doubled likewise.
	RateLimitBackoff time.Duration
	// MaxRetryAfter caps a Retry-After (default 10m).
	MaxRetryAfter time.Duration
	// Timeout bounds one request (default 2m).
	Timeout time.Duration
	// Jitter returns a number in [0, 1) (default math/rand).
	Jitter func() float64
}

// Client is the workspace API's client. It is safe for concurrent use.
type Client struct {
	o      Options
	base   string
	hc     *http.Client
	tokens *tokens
	budget *budget
}

// New checks the options and builds the client; no request is made.
func New(o Options) (*Client, error) {
	for _, f := range []struct{ name, v string }{{"api url", o.APIURL}, {"token url", o.TokenURL}} {
		u, err := url.Parse(f.v)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return nil, fmt.Errorf("workspace %s %q: want an http:// or https:// URL", f.name, f.v)
		}
		if u.User != nil {
			return nil, fmt.Errorf("workspace %s: credentials do not belong in the URL", f.name)
		}
	}
	if o.ClientID == "" || o.ClientSecret == "" {
		return nil, errors.New("workspace: no client id or secret")
	}
	switch o.ClientAuth {
	case "":
		o.ClientAuth = AuthBasic
	case AuthBasic, AuthPost:
	default:
		return nil, fmt.Errorf("workspace client_auth %q: want basic or post", o.ClientAuth)
	}
	for _, s := range o.Scopes {
		if !strings.HasSuffix(s, ":view") {
			return nil, fmt.Errorf("workspace scope %q: only :view scopes are asked for", s)
		}
	}
	if o.MaxRequestsPerMinute <= 0 {
		o.MaxRequestsPerMinute = 120
	}
	if o.Params == (ListingParams{}) {
		o.Params = ListingParams{Cursor: "cursor", After: "after", Before: "before", Sort: "sort"}
	}
	if o.Clock == nil {
		o.Clock = clock.Real{}
	}
	if o.Version == "" {
		o.Version = "devel"
	}
	if o.Limits.Listing <= 0 {
		o.Limits.Listing = MaxListingBytes
	}
	if o.Limits.Usage <= 0 {
		o.Limits.Usage = MaxUsageBytes
	}
	if o.Limits.Daily <= 0 {
		o.Limits.Daily = MaxDailyBytes
	}
	if o.MaxAttempts <= 0 {
		o.MaxAttempts = 5
	}
	if o.Backoff <= 0 {
		o.Backoff = 500 * time.Millisecond
	}
	if o.MaxBackoff <= 0 {
		o.MaxBackoff = time.Minute
	}
	if o.RateLimitBackoff <= 0 {
		o.RateLimitBackoff = 10 * time.Second
	}
	if o.MaxRetryAfter <= 0 {
		o.MaxRetryAfter = 10 * time.Minute
	}
	if o.Timeout <= 0 {
		o.Timeout = 2 * time.Minute
	}
	if o.Jitter == nil {
		o.Jitter = rand.Float64
	}
	h := o.Hooks
	if h.Request == nil {
		h.Request = func(string, string) {}
	}
	if h.Bytes == nil {
		h.Bytes = func(string, int64) {}
	}
	if h.Anomaly == nil {
		h.Anomaly = func(string, string, int) {}
	}
	if h.Shape == nil {
		h.Shape = func(string, *Shape) {}
	}
	o.Hooks = h
	rt := o.Transport
	if rt == nil {
		if err := o.HTTP.Validate(); err != nil {
			return nil, fmt.Errorf("workspace http settings: %w", err)
		}
		hc, err := promconfig.NewClientFromConfig(o.HTTP, "amp_workspace")
		if err != nil {
			return nil, fmt.Errorf("workspace http settings: %w", err)
		}
		rt = hc.Transport
	}
	hc := &http.Client{
		Transport: getOnly{rt},
		// A redirect would carry the token (or the client's secret) to
		// wherever it points.
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	c := &Client{o: o, base: strings.TrimRight(o.APIURL, "/"), hc: hc, budget: newBudget(o.Clock, o.MaxRequestsPerMinute)}
	c.tokens = &tokens{hc: hc, clk: o.Clock, url: o.TokenURL, id: o.ClientID, secret: o.ClientSecret, auth: o.ClientAuth,
		resource: o.Resource, scopes: o.Scopes, userAgent: c.userAgent(), onRequest: h.Request, maxRetryAfter: o.MaxRetryAfter}
	return c, nil
}

func (c *Client) userAgent() string { return "amp-exporter/" + c.o.Version }

// Token fetches a token now if none is cached (the check uses it to test
// the credentials on their own).
func (c *Client) Token(ctx context.Context) error {
	_, err := c.tokens.get(ctx)
	return err
}

// GrantedScopes are the scopes the last token answer named (its `scope`).
func (c *Client) GrantedScopes() []string { return c.tokens.grantedScopes() }

// ListThreads fetches one page of the listing, oldest first sync first.
func (c *Client) ListThreads(ctx context.Context, q ListQuery) (ThreadPage, error) {
	v := url.Values{}
	if q.Limit > 0 {
		v.Set("limit", strconv.Itoa(min(q.Limit, 100)))
	}
	p := c.o.Params
	if q.Cursor != "" {
		v.Set(p.Cursor, q.Cursor)
	}
	if !q.After.IsZero() {
		v.Set(p.After, stamp(q.After))
	}
	if !q.Before.IsZero() {
		v.Set(p.Before, stamp(q.Before))
	}
	if p.Sort != "" {
		v.Set(p.Sort, "ASC")
	}
	b, err := c.get(ctx, EndpointThreads, "/api/v2/threads", v, c.o.Limits.Listing)
	if err != nil {
		return ThreadPage{}, err
	}
	page, shape, err := DecodeThreadPage(b)
	c.report(EndpointThreads, shape)
	return page, err
}

// ListAll pages through the listing from q, handing each page to fn; an
// absent or empty next cursor ends it, and so does a cursor seen before
// (counted as repeated_cursor).
func (c *Client) ListAll(ctx context.Context, q ListQuery, fn func(ThreadPage) error) error {
	seen := map[string]bool{}
	for {
		page, err := c.ListThreads(ctx, q)
		if err != nil {
			return err
		}
		if err := fn(page); err != nil {
			return err
		}
		next := page.NextCursor
		if next == "" {
			return nil
		}
		if seen[next] || next == q.Cursor {
			c.o.Hooks.Anomaly(EndpointThreads, ReasonRepeatedCursor, 1)
			return nil
		}
		seen[next] = true
		q.Cursor = next
	}
}

// ThreadUsage fetches a thread's usage (its sub-threads rolled in).
func (c *Client) ThreadUsage(ctx context.Context, id string) (ThreadUsage, error) {
	if !validID(id) {
		return ThreadUsage{}, fmt.Errorf("%s: not a thread id", EndpointThreadUsage)
	}
	b, err := c.get(ctx, EndpointThreadUsage, "/api/v2/threads/"+url.PathEscape(id)+"/usage", nil, c.o.Limits.Usage)
	if err != nil {
		return ThreadUsage{}, err
	}
	u, shape, err := DecodeThreadUsage(b)
	c.report(EndpointThreadUsage, shape)
	if err == nil && u.ThreadID != id {
		return ThreadUsage{}, &AnswerError{Endpoint: EndpointThreadUsage, Field: "threadID", Reason: ReasonTypeMismatch, Detail: "not the thread asked for"}
	}
	return u, err
}

// DailyUsage fetches the rollup of the lookbackDays days (1 to 365) up to
// endDate (YYYY-MM-DD; "" for the server's today).
func (c *Client) DailyUsage(ctx context.Context, endDate string, lookbackDays int) (DailyUsage, error) {
	v := url.Values{"lookbackDays": {strconv.Itoa(min(max(lookbackDays, 1), 365))}}
	if endDate != "" {
		if _, err := time.Parse(time.DateOnly, endDate); err != nil {
			return DailyUsage{}, fmt.Errorf("%s: endDate %q is not YYYY-MM-DD", EndpointDailyUsage, endDate)
		}
		v.Set("endDate", endDate)
	}
	b, err := c.get(ctx, EndpointDailyUsage, "/api/v2/workspace/analytics/daily-usage", v, c.o.Limits.Daily)
	if err != nil {
		return DailyUsage{}, err
	}
	du, shape, err := DecodeDailyUsage(b)
	c.report(EndpointDailyUsage, shape)
	return du, err
}

func (c *Client) report(endpoint string, s *Shape) {
	if s == nil {
		return
	}
	for a, n := range s.Anomalies {
		c.o.Hooks.Anomaly(endpoint, a.Reason, n)
	}
	c.o.Hooks.Shape(endpoint, s)
}

// stamp formats a time as the API's examples do: RFC 3339, UTC, with
// milliseconds.
func stamp(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000Z07:00") }

var scopeOf = map[string]string{EndpointThreads: ScopeThreadsMeta, EndpointThreadUsage: ScopeThreadsMeta, EndpointDailyUsage: ScopeAnalytics}

// get sends GET path?q within the budget and returns the 200 answer's
// body: a refused token is replaced once, 429 and 5xx are retried with
// Retry-After or backoff, the rest is an error at once.
func (c *Client) get(ctx context.Context, endpoint, path string, q url.Values, limit int64) ([]byte, error) {
	u := c.base + path
	if len(q) > 0 {
		u += "?" + q.Encode()
	}
	reauthed := false
	for attempt := 1; ; attempt++ {
		if err := c.budget.wait(ctx); err != nil {
			return nil, fmt.Errorf("%s: %w", endpoint, err)
		}
		tok, err := c.tokens.get(ctx)
		if err != nil {
			var te *TokenError
			if !errors.As(err, &te) || !te.transient || attempt >= c.o.MaxAttempts {
				return nil, err
			}
			wait := c.backoff(c.o.Backoff, attempt)
			if te.hasRetryAfter {
				wait = te.retryAfter
			}
			if err := sleep(ctx, c.o.Clock, wait); err != nil {
				return nil, fmt.Errorf("%s: %w", endpoint, err)
			}
			continue
		}
		status, header, body, err := c.once(ctx, endpoint, u, tok, limit)
		var wait time.Duration
		switch {
		case err != nil && ctx.Err() != nil:
			return nil, fmt.Errorf("%s: %w", endpoint, ctx.Err())
		case err != nil:
			var ae *AnswerError
			if errors.As(err, &ae) {
				return nil, err
			}
			if attempt >= c.o.MaxAttempts {
				return nil, fmt.Errorf("%s: %w", endpoint, err)
			}
			wait = c.backoff(c.o.Backoff, attempt)
		case status == http.StatusOK:
			return body, nil
		case status == http.StatusUnauthorized && !reauthed:
			reauthed = true
			c.tokens.refused(tok)
			attempt-- // not a try of its own
			continue
		case status == http.StatusForbidden:
			return nil, &ScopeError{Endpoint: endpoint, Scope: scopeOf[endpoint]}
		case status == http.StatusNotFound:
			return nil, fmt.Errorf("%s: %w", endpoint, ErrNotFound)
		case status == http.StatusTooManyRequests || status >= 500:
			if attempt >= c.o.MaxAttempts {
				return nil, &StatusError{Endpoint: endpoint, Status: status, Message: c.tokens.scrub(scrubToken(errorMessage(body), tok))}
			}
			d, ok := retryAfter(header.Get("Retry-After"), c.o.Clock.Now(), c.o.MaxRetryAfter)
			switch {
			case ok:
				wait = d
			case status == http.StatusTooManyRequests:
				wait = c.backoff(c.o.RateLimitBackoff, attempt)
			default:
				wait = c.backoff(c.o.Backoff, attempt)
			}
		default:
			return nil, &StatusError{Endpoint: endpoint, Status: status, Message: c.tokens.scrub(scrubToken(errorMessage(body), tok))}
		}
		if err := sleep(ctx, c.o.Clock, wait); err != nil {
			return nil, fmt.Errorf("%s: %w", endpoint, err)
		}
	}
}

// once makes one request; the body is read whole for 200 (bounded by
// limit) and for errors up to maxErrorBytes.
func (c *Client) once(ctx context.Context, endpoint, u, tok string, limit int64) (int, http.Header, []byte, error) {
	ctx, cancel := context.WithTimeout(ctx, c.o.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return 0, nil, nil, &AnswerError{Endpoint: endpoint, Reason: "bad_request", Detail: "cannot build the request"}
	}
	req.Header.Set("Authorization", "Bearer "+tok)
	req.Header.Set("Accept", "application/json")
	req.Header.Set("User-Agent", c.userAgent())
	resp, err := c.hc.Do(req)
	if err != nil {
		c.o.Hooks.Request(endpoint, "error")
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err // its URL is ours, but keep errors short
		}
		return 0, nil, nil, err
	}
	defer resp.Body.Close()
	c.o.Hooks.Request(endpoint, strconv.Itoa(resp.StatusCode))
	max := limit
	if resp.StatusCode != http.StatusOK {
		max = maxErrorBytes
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, max+1))
	c.o.Hooks.Bytes(endpoint, int64(len(body)))
	if resp.StatusCode == http.StatusOK && int64(len(body)) > limit {
		// Not read further: a larger answer is not retried either.
		return 0, nil, nil, &AnswerError{Endpoint: endpoint, Reason: ReasonTooLarge, Detail: fmt.Sprintf("more than %d bytes", limit)}
	}
	if err != nil && resp.StatusCode == http.StatusOK {
		return 0, nil, nil, err
	}
	return resp.StatusCode, resp.Header, body, nil
}

// backoff is base doubled per attempt up to MaxBackoff, the upper half
// jittered.
func (c *Client) backoff(base time.Duration, attempt int) time.Duration {
	d := base
	for i := 1; i < attempt && d < c.o.MaxBackoff; i++ {
		d *= 2
	}
	d = min(d, c.o.MaxBackoff)
	return d/2 + time.Duration(c.o.Jitter()*float64(d/2))
}

// retryAfter reads Retry-After: seconds or an HTTP-date, capped; a date
// past is no wait.
func retryAfter(v string, now time.Time, limit time.Duration) (time.Duration, bool) {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0, false
	}
	if n, err := strconv.ParseInt(v, 10, 64); err == nil {
		if n < 0 {
			return 0, false
		}
		return min(time.Duration(min(n, 1<<30))*time.Second, limit), true
	}
	t, err := http.ParseTime(v)
	if err != nil {
		return 0, false
	}
	return min(max(t.Sub(now), 0), limit), true
}

// scrubToken removes the token from a text from the server, should it be
// echoed.
func scrubToken(s, tok string) string {
	if tok == "" {
		return s
	}
	return strings.ReplaceAll(s, tok, "<token>")
}

// errorMessage is the API error body's "error", bounded and printable.
func errorMessage(body []byte) string {
	var e struct {
		Error string `json:"error"`
	}
	if json.Unmarshal(body, &e) != nil || e.Error == "" {
		return ""
	}
	s := strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f {
			return ' '
		}
		return r
	}, e.Error)
	if len(s) > 200 {
		s = strings.ToValidUTF8(s[:200], "") + "…"
	}
	return s
}
