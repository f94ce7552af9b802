package spend

import (
	"testing"
	"time"
)

func TestUntil(t *testing.T) {
	now := time.Date(2026, 12, 2, 0, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		d    time.Duration
		want string
	}{{-time.Hour, "now"}, {90 * time.Second, "2m"}, {3*time.Hour + 5*time.Minute, "3h 5m"}, {49*time.Hour + 30*time.Minute, "2d 1h"}} {
		if got := Until(now.Add(c.d), now); got != c.want {
			t.Errorf("Until(%v) = %q, want %q", c.d, got, c.want)
		}
	}
}
