package testutil

import (
	"testing"
	"time"
)

// WaitUntil polls cond every 5 ms until it holds, and fails the test
// naming what when it has not within 10 s: for conditions a test cannot
// be told about (another goroutine's progress seen through a metric or a
// server's state). The bound is a deadlock guard, not a timing assertion.
func WaitUntil(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within 10s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
