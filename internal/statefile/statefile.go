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
// inspection, and returns its new name.
func SetAside(path string, now time.Time) (string, error) {
	dst := fmt.Sprintf("%s.damaged-%s", path, now.UTC().Format("20060102T150405Z"))
	if err := os.Rename(path, dst); err != nil {
		return "", fmt.Errorf("set aside damaged state file: %w", err)
	}
	return dst, nil
}
