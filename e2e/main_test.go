//go:build e2e

// Package e2e runs the amp-exporter binary against real thread files, a real
// Prometheus and promtool (Debian's prometheus package). Run with
//
//	go test -tags e2e ./e2e/
//
// Without the tag nothing here is compiled, so `go test ./...` stays fast.
package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// exporterBin is the amp-exporter binary built once for all tests.
var exporterBin string

// repoRoot is the module root (the parent of this directory).
var repoRoot string

func TestMain(m *testing.M) {
	os.Exit(runMain(m))
}

func runMain(m *testing.M) int {
	root, err := filepath.Abs("..")
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		return 1
	}
	repoRoot = root
	dir, err := os.MkdirTemp("", "amp-exporter-e2e-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		return 1
	}
	defer os.RemoveAll(dir)
	exporterBin = filepath.Join(dir, "amp-exporter")

	goBin, err := exec.LookPath("go") // go test puts $GOROOT/bin on PATH
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e: cannot find the go command:", err)
		return 1
	}
	args := []string{"build", "-o", exporterBin,
		"-ldflags", "-X github.com/prometheus/common/version.Version=e2e"}
	if os.Getenv("E2E_EXPORTER_RACE") == "1" { // optional: race-detect the exporter too
		args = append(args, "-race")
	}
	args = append(args, "./cmd/amp-exporter")
	build := exec.Command(goBin, args...)
	build.Dir = repoRoot
	if out, err := build.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "e2e: go %v: %v\n%s", args, err, out)
		return 1
	}
	return m.Run()
}
