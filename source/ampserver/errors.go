package ampserver

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

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
