//go:build e2e

package e2e

import (
	"os"
	"testing"
)

// requirePrometheus3 returns the Prometheus 3 binary named by PROMETHEUS3,
// which make e2e sets after building it from the module proxy. Unset or
// not executable fails the test: Debian's Prometheus is 2.x, and a skipped
// test would hide that the OTLP and remote-write 2.0 paths never met a
// real receiver.
func requirePrometheus3(t *testing.T) string {
	t.Helper()
	bin := os.Getenv("PROMETHEUS3")
	if bin == "" {
		t.Fatal("PROMETHEUS3 is not set: run `make e2e` (it builds Prometheus 3 once and sets it), or " +
			"PROMETHEUS3=$(bash scripts/test-deps.sh prometheus3-path) go test -tags e2e ./e2e/")
	}
	if fi, err := os.Stat(bin); err != nil || fi.IsDir() || fi.Mode()&0o111 == 0 {
		t.Fatalf("PROMETHEUS3=%q is not an executable (%v): run bash scripts/test-deps.sh prometheus3-path", bin, err)
	}
	return bin
}
