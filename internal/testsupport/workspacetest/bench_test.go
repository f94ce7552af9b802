package workspacetest

import (
	"fmt"
	"net/url"
	"testing"
)

// BenchmarkNew builds the workspace and the large one: the time
// and bytes go to generating every thread once for the rollup's sums.
func BenchmarkNew(b *testing.B) {
	for _, cfg := range []Config{{Seed: 1}, {Seed: 1, Users: 2000, Threads: 200000}} {
		full := cfg.withDefaults()
		b.Run(fmt.Sprintf("users=%d/threads=%d", full.Users, full.Threads), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				New(cfg, Options{}).Close()
			}
		})
	}
}

// BenchmarkListingPage serves one page of 100 rows from the middle of the
// large workspace (a thread is generated when it is listed).
func BenchmarkListingPage(b *testing.B) {
	s := New(Config{Seed: 1, Users: 2000, Threads: 200000}, Options{})
	defer s.Close()
	c := newClient(b, s)
	q := url.Values{"limit": {"100"}, "cursor": {encodeCursor(pos{100000, 0}, false)}}
	b.ReportAllocs()
	for b.Loop() {
		c.get("/api/v2/threads", q)
	}
}
