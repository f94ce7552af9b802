package pushhttp

import (
	"errors"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"
)

func TestRetryAfter(t *testing.T) {
	now := time.Date(2026, 12, 6, 10, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		in   string
		want time.Duration
	}{
		{"", 0},
		{"5", 5 * time.Second},
		{" 7 ", 7 * time.Second},
		{"0", 0},
		{"-1", 0},
		{"soon", 0},
		{now.Add(90 * time.Second).Format(http.TimeFormat), 90 * time.Second},
		{now.Add(-time.Hour).Format(http.TimeFormat), 0},
		{now.Format(http.TimeFormat), 0},
	} {
		if got := RetryAfter(tc.in, now); got != tc.want {
			t.Errorf("RetryAfter(%q) = %s, want %s", tc.in, got, tc.want)
		}
	}
}

func TestScrubURL(t *testing.T) {
	inner := errors.New("connection refused")
	err := ScrubURL(&url.Error{Op: "Post", URL: "https://rx.example.com/push?token=SECRET", Err: inner})
	if strings.Contains(err.Error(), "SECRET") || strings.Contains(err.Error(), "rx.example.com") {
		t.Errorf("the URL is still in %q", err)
	}
	if !errors.Is(err, inner) || err.Error() != "Post: connection refused" {
		t.Errorf("got %q, want the operation and the cause kept", err)
	}
	if other := errors.New("x"); ScrubURL(other) != other {
		t.Error("an error without a URL must come back as it was")
	}
}
