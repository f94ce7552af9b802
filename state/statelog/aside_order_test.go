package statelog

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestSetAsideIsDurableBeforeTheLogChanges: the copy of a damaged log is
// synced, and so is its directory entry, before the log is cut or
// replaced; else a power cut in between could keep the repaired log and
// lose the only copy of what the damage hid.
func TestSetAsideIsDurableBeforeTheLogChanges(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.log")
	l, _ := open(t, path)
	commit(t, l, put("a", "1"))
	mid := l.Size()
	commit(t, l, put("b", "2"))
	commit(t, l, put("c", "3"))
	l.Close()
	b, _ := os.ReadFile(path)
	b[mid+batchHead+1] ^= 0xff
	b = append(b, 0xA7, 'B') // and a torn tail to cut
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	var events []string
	fsync0, syncDir0 := fsync, syncDir
	t.Cleanup(func() { fsync, syncDir = fsync0, syncDir0 })
	fsync = func(f *os.File) error {
		name := filepath.Base(f.Name())
		switch {
		case strings.Contains(name, ".damaged-"):
			name = "aside"
		case strings.Contains(name, ".tmp-"):
			name = "compacted"
		}
		events = append(events, "sync "+name)
		return f.Sync()
	}
	syncDir = func(dir string) { events = append(events, "sync dir"); syncDir0(dir) }
	_, rec := open(t, path)
	if rec.SetAside == "" || len(rec.Damage) != 1 {
		t.Fatalf("recovery %+v, want damage set aside", rec)
	}
	want := []string{"sync aside", "sync dir", "sync state.log", "sync compacted", "sync dir"}
	if !slices.Equal(events, want) {
		t.Errorf("syncs %q, want %q", events, want)
	}
}
