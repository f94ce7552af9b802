package statelog

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// Set-aside copies and temporary files (what is left of the JSON state
// files of the versions before the log, folded in here).

func TestSetAsideTwiceInOneSecondKeepsBoth(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "state.json")
	now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	var names []string
	for _, content := range []string{"first", "second", "third"} {
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		aside, err := setAside(path, now)
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, aside)
	}
	for i, want := range []string{"first", "second", "third"} {
		if b, err := os.ReadFile(names[i]); err != nil || string(b) != want {
			t.Errorf("copy %d (%s): %q %v, want %q", i, names[i], b, err, want)
		}
	}
}

func TestCleanTempRemovesOnlyOwnTemporaries(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "state.json")
	for _, n := range []string{"state.json", "state.json.tmp-123", "state.json.tmp-abc", "other.json.tmp-1", "state.json.damaged-x"} {
		if err := os.WriteFile(filepath.Join(dir, n), []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	n, err := cleanTemp(path)
	if err != nil || n != 2 {
		t.Fatalf("cleanTemp = %d, %v; want 2 removed", n, err)
	}
	entries, _ := os.ReadDir(dir)
	var left []string
	for _, e := range entries {
		left = append(left, e.Name())
	}
	if strings.Join(left, ",") != "other.json.tmp-1,state.json,state.json.damaged-x" {
		t.Fatalf("left: %v", left)
	}
}
