// Package pushhttp holds what the exporter's HTTP push clients (the
// remote-write and OTLP senders, `amp-exporter ingest`) read the same
// way: a receiver's Retry-After, and transport errors without the
// receiver's URL.
package pushhttp

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// RetryAfter reads a Retry-After value, delay-seconds or an HTTP date,
// as a wait from now; 0 when it is absent, unreadable, not positive or
// already past, so the caller's own backoff applies.
func RetryAfter(v string, now time.Time) time.Duration {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0
	}
	if n, err := strconv.Atoi(v); err == nil {
		if n <= 0 {
			return 0
		}
		return time.Duration(n) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil && t.After(now) {
		return t.Sub(now)
	}
	return 0
}

// ScrubURL drops the URL from a transport error: a receiver's URL may
// carry a token in its query, and errors reach the log.
func ScrubURL(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return fmt.Errorf("%s: %w", ue.Op, ue.Err)
	}
	return err
}
