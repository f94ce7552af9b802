//go:build unix

package ampserver

import (
	"context"
	"os"
	"syscall"
	"testing"
	"time"
)

// A refreshed secrets.json keeps its owner: an exporter run by another
// user than the CLI's (root, a service account with access to the file)
// must not leave the CLI a file it cannot read. Run as root, the file is
// given to another user first; otherwise it is the process's own, and
// stays so.
func TestOAuthRefreshKeepsTheOwner(t *testing.T) {
	e := newOAuthEnv(t, time.Minute)
	uid, gid := os.Geteuid(), os.Getegid()
	if uid == 0 {
		uid, gid = 4321, 4321
		if err := os.Chown(e.secrets, uid, gid); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := e.mustKey(true).APIKey(context.Background()); err != nil {
		t.Fatal(err)
	}
	if rot, _, _ := e.o.Stats(); rot != 1 {
		t.Fatalf("%d rotations", rot)
	}
	fi, err := os.Stat(e.secrets)
	if err != nil {
		t.Fatal(err)
	}
	st := fi.Sys().(*syscall.Stat_t)
	if int(st.Uid) != uid || int(st.Gid) != gid {
		t.Fatalf("secrets.json is owned by %d:%d after the refresh, want %d:%d", st.Uid, st.Gid, uid, gid)
	}
	e.checkFile()
}
