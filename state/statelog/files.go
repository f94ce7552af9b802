package statelog

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// writeFile creates path atomically with a header.
func writeFile(path string) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), filepath.Base(path)+".tmp-*")
	if err != nil {
		return fmt.Errorf("create state log: %w", err)
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(header()); err != nil {
		tmp.Close()
		return fmt.Errorf("write state log: %w", err)
	}
	if err := fsync(tmp); err != nil {
		tmp.Close()
		return fmt.Errorf("sync state log: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("close state log: %w", err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("create state log: %w", err)
	}
	syncDir(filepath.Dir(path))
	return nil
}

// fsync syncs a file to its storage, and syncDir a directory (best
// effort: not every file system syncs directories). They are variables so
// that the fuzz target, which opens thousands of logs a second, can do
// without them (it tests what is read, not what survives a power cut), and
// a test can see their order.
var (
	fsync   = (*os.File).Sync
	syncDir = func(dir string) {
		if d, err := os.Open(dir); err == nil {
			_ = d.Sync()
			d.Close()
		}
	}
)

func copyAside(path string, now time.Time) (string, error) {
	dst, err := asideName(path, now)
	if err != nil {
		return "", err
	}
	src, err := os.Open(path)
	if err != nil {
		return "", fmt.Errorf("copy damaged state log: %w", err)
	}
	defer src.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return "", fmt.Errorf("copy damaged state log: %w", err)
	}
	_, err = io.Copy(out, src)
	if err == nil {
		err = fsync(out)
	}
	if err = errors.Join(err, out.Close()); err != nil {
		os.Remove(dst) // no half copy left behind (the next start copies again)
		return "", fmt.Errorf("copy damaged state log: %w", err)
	}
	// The copy's name must be on disk before the log is cut or replaced.
	syncDir(filepath.Dir(dst))
	return dst, nil
}

// setAside renames a file that is not a state log out of the way, keeping
// it for inspection, and returns its new name. Two calls within the same
// second never overwrite each other's copy.
func setAside(path string, now time.Time) (string, error) {
	dst, err := asideName(path, now)
	if err != nil {
		return "", err
	}
	if err := os.Rename(path, dst); err != nil {
		return "", fmt.Errorf("set aside damaged state file: %w", err)
	}
	return dst, nil
}

// asideName returns a name for a set-aside copy of path that no file has
// yet: path.damaged-<UTC time>, with -2, -3, … appended when that exists.
func asideName(path string, now time.Time) (string, error) {
	base := fmt.Sprintf("%s.damaged-%s", path, now.UTC().Format("20060102T150405Z"))
	for i := 1; i < 10000; i++ {
		dst := base
		if i > 1 {
			dst = fmt.Sprintf("%s-%d", base, i)
		}
		if _, err := os.Lstat(dst); errors.Is(err, fs.ErrNotExist) {
			return dst, nil
		} else if err != nil {
			return "", fmt.Errorf("set aside damaged state file: %w", err)
		}
	}
	return "", fmt.Errorf("set aside damaged state file: too many copies of %q", path)
}

// cleanTemp removes the temporary files (path.tmp-*) a crash in the middle
// of a compaction or a creation left behind, and returns how many it
// removed.
func cleanTemp(path string) (int, error) {
	entries, err := os.ReadDir(filepath.Dir(path))
	if errors.Is(err, fs.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("look for temporary state files: %w", err)
	}
	prefix := filepath.Base(path) + ".tmp-"
	n := 0
	for _, e := range entries {
		if e.IsDir() || !strings.HasPrefix(e.Name(), prefix) {
			continue
		}
		if err := os.Remove(filepath.Join(filepath.Dir(path), e.Name())); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return n, fmt.Errorf("remove temporary state file: %w", err)
		}
		n++
	}
	return n, nil
}
