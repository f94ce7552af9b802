package fileid

import (
	"io/fs"
	"os"
	"path/filepath"
	"testing"
	"time"
)

type fakeInfo struct{ fs.FileInfo }

func (fakeInfo) Sys() any { return "not a stat result" }

func TestOf(t *testing.T) {
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a"), filepath.Join(dir, "b")
	for _, p := range []string{a, b} {
		if err := os.WriteFile(p, []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	stat := func(p string) ID {
		t.Helper()
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		return Of(fi)
	}
	ida, ida2, idb := stat(a), stat(a), stat(b)

	if !Supported {
		for _, id := range []ID{ida, idb} {
			if id != (ID{}) {
				t.Fatalf("platform without inodes returned %+v, want the zero ID", id)
			}
		}
		return
	}
	if ida.Inode == 0 || ida.CtimeNs == 0 {
		t.Fatalf("Of(a) = %+v, want an inode and a ctime", ida)
	}
	if ida != ida2 {
		t.Fatalf("two stats of one file differ: %+v vs %+v", ida, ida2)
	}
	if ida.Inode == idb.Inode {
		t.Fatalf("two files share inode %d", ida.Inode)
	}
	// The ctime is a real time: within a day of now (not a unit mix-up).
	if d := time.Since(time.Unix(0, ida.CtimeNs)); d < -24*time.Hour || d > 24*time.Hour {
		t.Fatalf("ctime %v is %v away from now", time.Unix(0, ida.CtimeNs), d)
	}
	// Replacing a file by rename gives the path a new identity.
	if err := os.Rename(b, a); err != nil {
		t.Fatal(err)
	}
	if got := stat(a); got.Inode != idb.Inode {
		t.Fatalf("after rename, inode %d, want %d", got.Inode, idb.Inode)
	}
}

func TestOfNoStat(t *testing.T) {
	if got := Of(nil); got != (ID{}) {
		t.Fatalf("Of(nil) = %+v", got)
	}
	fi, err := os.Stat(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if got := Of(fakeInfo{fi}); got != (ID{}) {
		t.Fatalf("Of(non-OS FileInfo) = %+v, want the zero ID", got)
	}
}
