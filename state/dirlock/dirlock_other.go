//go:build !(darwin || dragonfly || freebsd || linux || netbsd || openbsd || windows)

package dirlock

import (
	"errors"
	"io/fs"
	"os"
)

// hint says what to do after a crash: the lock file outlives its process.
func hint(path string) string {
	return "; if no other process uses it, one crashed: remove " + path
}

// releasedByOS: the lock ends with the process that holds it.
const releasedByOS = false

// lockFile creates the lock file exclusively: its existence is the lock.
func lockFile(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o644)
	if errors.Is(err, fs.ErrExist) {
		return nil, ErrLocked
	}
	return f, err
}

func release(f *os.File, path string) error {
	return errors.Join(f.Close(), os.Remove(path))
}
