package statefile

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

type doc struct {
	A int    `json:"a"`
	B string `json:"b"`
}

func TestSaveLoadRoundTrip(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sub", "state.json")
	if found, err := Load(path, &doc{}); found || err != nil {
		t.Fatalf("missing file: found=%v err=%v", found, err)
	}
	if err := Save(path, doc{A: 7, B: "x"}); err != nil {
		t.Fatal(err)
	}
	if err := Save(path, doc{A: 8, B: "y"}); err != nil {
		t.Fatal(err)
	}
	var got doc
	found, err := Load(path, &got)
	if !found || err != nil || got != (doc{A: 8, B: "y"}) {
		t.Fatalf("got %+v found=%v err=%v", got, found, err)
	}
	entries, _ := os.ReadDir(filepath.Dir(path))
	if len(entries) != 1 {
		t.Fatalf("temporary files left behind: %v", entries)
	}
}

func TestDamagedFileIsReportedAndSetAside(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "state.json")
	for _, content := range []string{`{"a": 1, "b": "x"`, `garbage`, `{"a": 1, "zzz": 2}`} {
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		found, err := Load(path, &doc{})
		if !found || !errors.Is(err, ErrDamaged) {
			t.Fatalf("%q: found=%v err=%v, want ErrDamaged", content, found, err)
		}
		if !strings.Contains(err.Error(), path) {
			t.Errorf("error does not name the file: %v", err)
		}
	}
	aside, err := SetAside(path, time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Fatalf("damaged file still in place: %v", err)
	}
	if b, err := os.ReadFile(aside); err != nil || string(b) != `{"a": 1, "zzz": 2}` {
		t.Fatalf("set-aside copy: %q %v", b, err)
	}
}

func TestSetAsideTwiceInOneSecondKeepsBoth(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "state.json")
	now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	var names []string
	for _, content := range []string{"first", "second", "third"} {
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		aside, err := SetAside(path, now)
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
	n, err := CleanTemp(path)
	if err != nil || n != 2 {
		t.Fatalf("CleanTemp = %d, %v; want 2 removed", n, err)
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

func TestLoadKnownIgnoresNewerFields(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.json")
	if err := os.WriteFile(path, []byte(`{"a": 1, "b": "x", "added_later": [1]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	var got doc
	if found, err := LoadKnown(path, &got); !found || err != nil || got != (doc{A: 1, B: "x"}) {
		t.Fatalf("got %+v found=%v err=%v", got, found, err)
	}
}
