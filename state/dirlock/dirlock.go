// Package dirlock holds a directory for one process: an exclusive lock on a
// lock file inside it, taken without waiting. Two exporters writing one
// state log would corrupt it; the second fails fast instead.
//
// On unix (flock) and Windows (LockFileEx) the lock belongs to the open
// file, so the operating system releases it when the process ends, however
// it ends (kill -9 included); the lock file itself stays, empty of meaning
// but for the process id written into it for the error message. Elsewhere
// the lock is the lock file's existence (created exclusively, removed on
// Release): a crash leaves it behind, and the error says to remove it.
package dirlock

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
)

// Name is the lock file's name in the directory.
const Name = "lock"

// ErrLocked is returned when another process holds the directory.
var ErrLocked = errors.New("directory in use by another process")

// Lock is a held directory.
type Lock struct {
	f    *os.File
	path string
}

// Acquire locks dir (creating it if needed), or fails at once with an
// error wrapping ErrLocked that names the directory when another process
// (or another Lock in this one) holds it.
func Acquire(dir string) (*Lock, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("lock %s: %w", dir, err)
	}
	path := filepath.Join(dir, Name)
	f, err := lockFile(path)
	if errors.Is(err, ErrLocked) {
		return nil, fmt.Errorf("%w: %s%s%s", ErrLocked, dir, holder(path), hint(path))
	}
	if err != nil {
		return nil, fmt.Errorf("lock %s: %w", dir, err)
	}
	// For the error message of a process that finds the directory held.
	if err := f.Truncate(0); err == nil {
		_, _ = f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	}
	return &Lock{f: f, path: path}, nil
}

// holder names the process written into the lock file, if any.
func holder(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	pid, err := strconv.Atoi(string(bytes.TrimSpace(b)))
	if err != nil || pid <= 0 {
		return ""
	}
	return fmt.Sprintf(" (process %d)", pid)
}

// Release gives the directory up. It may be called more than once.
func (l *Lock) Release() error {
	if l == nil || l.f == nil {
		return nil
	}
	f := l.f
	l.f = nil
	return release(f, l.path)
}
