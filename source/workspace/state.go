package workspace

import (
	"bufio"
	"compress/gzip"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/amp-exporter/amp-exporter/store"
)

// StateName is the workspace source's state file in the storage
// directory. It is a file of its own, beside the state log: the other
// sources' state is untouched by it, and a state directory from before
// the source existed has none (the source then starts afresh).
const StateName = "workspace.json.gz"

// stateVersion is the format's version; a file of another version is
// set aside and the source starts afresh (nothing is counted twice by
// that: the counters start again from zero, as after a reset).
const stateVersion = 1

// stateFile is the file's content.
type stateFile struct {
	Version int                  `json:"version"`
	State   store.WorkspaceState `json:"state"`
}

// maxStateBytes bounds what is read back (decompressed): a workspace of
// 200,000 threads takes tens of megabytes.
const maxStateBytes = 1 << 30

// LoadState reads the state file of dir; ok is false when there is none.
func LoadState(dir string) (st store.WorkspaceState, ok bool, err error) {
	path := filepath.Join(dir, StateName)
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return st, false, nil
	}
	if err != nil {
		return st, false, fmt.Errorf("workspace state: %w", err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(bufio.NewReader(f))
	if err != nil {
		return st, false, fmt.Errorf("workspace state %q: %w", path, err)
	}
	var sf stateFile
	if err := json.NewDecoder(io.LimitReader(zr, maxStateBytes)).Decode(&sf); err != nil {
		return st, false, fmt.Errorf("workspace state %q: %w", path, err)
	}
	if sf.Version != stateVersion {
		return st, false, fmt.Errorf("workspace state %q: version %d, want %d", path, sf.Version, stateVersion)
	}
	return sf.State, true, nil
}

// SaveState writes st to dir's state file: to a temporary file first,
// synced, then renamed over the old one, so a crash leaves the old file
// or the new one, never a part. It returns the bytes written.
func SaveState(dir string, st store.WorkspaceState) (int64, error) {
	tmp, err := os.CreateTemp(dir, StateName+".*.tmp")
	if err != nil {
		return 0, fmt.Errorf("workspace state: %w", err)
	}
	defer os.Remove(tmp.Name()) // after the rename: nothing
	cw := &countingWriter{w: tmp}
	bw := bufio.NewWriter(cw)
	zw := gzip.NewWriter(bw)
	err = json.NewEncoder(zw).Encode(stateFile{Version: stateVersion, State: st})
	if err == nil {
		err = zw.Close()
	}
	if err == nil {
		err = bw.Flush()
	}
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), filepath.Join(dir, StateName))
	}
	if err != nil {
		return 0, fmt.Errorf("workspace state: %w", err)
	}
	return cw.n, nil
}

type countingWriter struct {
	w io.Writer
	n int64
}

func (c *countingWriter) Write(b []byte) (int, error) {
	n, err := c.w.Write(b)
	c.n += int64(n)
	return n, err
}
