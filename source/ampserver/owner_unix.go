//go:build unix

package ampserver

import (
	"errors"
	"fmt"
	"os"
	"syscall"
)

// keepOwner gives the new secrets.json f the owner and group of the file
// it replaces, target: an exporter run as another user (root, a service
// account) must not leave the Amp CLI a file it cannot read. Nothing to do
// when they are the same already, or target is not there.
func keepOwner(f *os.File, target string) error {
	fi, err := os.Stat(target)
	if err != nil {
		return nil
	}
	want, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return nil
	}
	tfi, err := f.Stat()
	if err != nil {
		return fmt.Errorf("amp secrets: %w", err)
	}
	if have, ok := tfi.Sys().(*syscall.Stat_t); ok && have.Uid == want.Uid && have.Gid == want.Gid {
		return nil
	}
	if err := f.Chown(int(want.Uid), int(want.Gid)); err != nil {
		return fmt.Errorf("amp secrets: the new file cannot be given the owner of %q (%d:%d): %w", target, want.Uid, want.Gid, err)
	}
	return nil
}

// unlinked refuses to write f when it has no name left: a bind-mounted
// secrets.json that the CLI has since replaced on the host (its rename
// leaves the mount on the old file), which no CLI process reads any more.
func unlinked(f *os.File) error {
	fi, err := f.Stat()
	if err != nil {
		return fmt.Errorf("amp secrets: %w", err)
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok && st.Nlink == 0 {
		return errors.New("amp secrets: the mounted file was replaced by the CLI since it was mounted, so the exporter sees an old copy no CLI reads: mount the folder of secrets.json, not the file")
	}
	return nil
}
