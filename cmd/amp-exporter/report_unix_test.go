//go:build unix

package main

import (
	"os"
	"testing"
)

// TestReportColorOnTerminalsUnlessNoColor: a character device (a
// terminal; /dev/null is one too) gets color, unless NO_COLOR is set to
// anything (no-color.org).
func TestReportColorOnTerminalsUnlessNoColor(t *testing.T) {
	f, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	t.Setenv("NO_COLOR", "")
	if !colorOn(f) {
		t.Error("no color on a character device")
	}
	t.Setenv("NO_COLOR", "1")
	if colorOn(f) {
		t.Error("color with NO_COLOR=1")
	}
}
