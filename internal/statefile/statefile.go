// Package statefile persists the exporter's counting state as one JSON file,
// written atomically: a crash leaves either the old file or the new one,
// never a torn one.
package statefile

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// Save writes v as JSON to path: to a temporary file in the same directory,
// synced, then renamed over path, and the directory synced so the rename
// survives a power cut.
func Save(path string, v any) error {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("create state directory: %w", err)
	}
	tmp, err := os.CreateTemp(dir, filepath.Base(path)+".tmp-*")
	if err != nil {
		return fmt.Errorf("create temporary state file: %w", err)
	}
	defer os.Remove(tmp.Name()) // no-op after a successful rename
	enc := json.NewEncoder(tmp)
	if err := enc.Encode(v); err != nil {
		tmp.Close()
		return fmt.Errorf("encode state: %w", err)
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return fmt.Errorf("sync state file: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("close state file: %w", err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("replace state file: %w", err)
	}
	if d, err := os.Open(dir); err == nil {
		_ = d.Sync() // best effort: not every file system syncs directories
		d.Close()
	}
	return nil
}

// ErrDamaged wraps a state file that exists but cannot be decoded.
var ErrDamaged = errors.New("state file is damaged")

// Load decodes the JSON at path into v. It reports found=false, and no
// error, when there is no file yet. A file that does not decode is an error
// wrapping ErrDamaged.
func Load(path string, v any) (found bool, err error) {
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("open state file: %w", err)
	}
	defer f.Close()
	dec := json.NewDecoder(f)
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return true, fmt.Errorf("%w: %q: %v", ErrDamaged, path, err)
	}
	return true, nil
}

// SetAside renames a damaged state file out of the way, keeping it for
// inspection, and returns its new name. Two calls within the same second
// never overwrite each other's copy.
func SetAside(path string, now time.Time) (string, error) {
	dst, err := AsideName(path, now)
	if err != nil {
		return "", err
	}
	if err := os.Rename(path, dst); err != nil {
		return "", fmt.Errorf("set aside damaged state file: %w", err)
	}
	return dst, nil
}

// AsideName returns a name for a set-aside copy of path that no file has
// yet: path.damaged-<UTC time>, with -2, -3, … appended when that exists.
func AsideName(path string, now time.Time) (string, error) {
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

// LoadKnown is Load for a file that may have been written by a newer
// version: fields this version does not know are ignored rather than
// taken for damage.
func LoadKnown(path string, v any) (found bool, err error) {
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("open state file: %w", err)
	}
	defer f.Close()
	if err := json.NewDecoder(f).Decode(v); err != nil {
		return true, fmt.Errorf("%w: %q: %v", ErrDamaged, path, err)
	}
	return true, nil
}

// CleanTemp removes the temporary files (path.tmp-*) a crash in the middle
// of a save left behind, and returns how many it removed.
func CleanTemp(path string) (int, error) {
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
