package state

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/amp-exporter/amp-exporter/state/dirlock"
	"github.com/amp-exporter/amp-exporter/state/statelog"
)

// Two keepers on one --storage.path would interleave their commits in one
// state log: the second fails at once, naming the directory, and gets it
// once the first is closed.
func TestStoragePathIsHeldByOneKeeper(t *testing.T) {
	dir := t.TempDir()
	a := newTestState(dir)
	mustRestore(t, a)
	b := newTestState(dir)
	err := b.keeper.restore()
	if !errors.Is(err, dirlock.ErrLocked) || !strings.Contains(err.Error(), dir) {
		t.Fatalf("second keeper on %s: %v, want a lock error naming the directory", dir, err)
	}
	if b.keeper.db != nil {
		t.Fatal("the second keeper opened the state log")
	}
	if err := a.keeper.close(); err != nil {
		t.Fatal(err)
	}
	if err := b.keeper.restore(); err != nil {
		t.Fatalf("after the first keeper closed: %v", err)
	}
	b.keeper.close()
}

// A keeper that fails to restore (here: a state of a newer version) gives
// the directory back.
func TestFailedRestoreReleasesTheStoragePath(t *testing.T) {
	dir := t.TempDir()
	l0, _, err := statelog.Open(filepath.Join(dir, LogName), testNow)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l0.Commit([]statelog.Record{{Key: keyMeta, Value: []byte(`{"version": 99}`)}}); err != nil {
		t.Fatal(err)
	}
	l0.Close()
	if err := newTestState(dir).keeper.restore(); !errors.Is(err, ErrNewer) {
		t.Fatalf("restore: %v, want ErrNewer", err)
	}
	l, err := dirlock.Acquire(dir)
	if err != nil {
		t.Fatalf("the failed keeper kept the directory: %v", err)
	}
	l.Release()
}
