// Package testsize tells the tests that have a short and a long size
// which to run. It imports nothing of the exporter, so any package's
// internal tests can use it.
package testsize

import "os"

// LongEnv names the environment variable that asks the tests for their
// long size. The suite a developer runs (`go test ./...`, `make unit`)
// uses the short size of the tests that have two, which checks the same
// things over fewer rounds; `make test` and `.ci/run` set it so that CI
// runs every such test at its long size as well.
const LongEnv = "AMP_TEST_LONG"

// Long reports whether the tests run at their long size: LongEnv is set
// to anything but "" or "0".
func Long() bool {
	v := os.Getenv(LongEnv)
	return v != "" && v != "0"
}
