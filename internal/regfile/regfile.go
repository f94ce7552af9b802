// Package regfile reads files that must be regular files (a login, a key
// file, a settings file) without ever blocking: a FIFO, a device or a
// socket put where such a file belongs is refused at once with
// ErrNotRegular instead of hanging the reader until someone writes to it.
//
// On Unix the file is opened with O_NONBLOCK (opening a FIFO for reading
// would otherwise wait for a writer) and checked with Fstat on the open
// descriptor; elsewhere it is checked with Stat before it is opened and
// with Stat on the open file after. The platform parts are in
// build-tagged files.
package regfile

import (
	"errors"
	"fmt"
	"io"
	"os"
)

// ErrNotRegular says the path names something other than a regular file.
var ErrNotRegular = errors.New("not a regular file")

// Open opens path for reading, refusing anything but a regular file
// (after following symbolic links) without blocking.
func Open(path string) (*os.File, error) {
	f, err := open(path)
	if err != nil {
		return nil, err
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		f.Close()
		return nil, notRegular(path, fi.Mode())
	}
	return f, nil
}

// ReadFile reads a regular file of at most max bytes.
func ReadFile(path string, max int64) ([]byte, error) {
	f, err := Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		return nil, fmt.Errorf("read %q: %w", path, err)
	}
	if int64(len(b)) > max {
		return nil, fmt.Errorf("%q is larger than %d bytes", path, max)
	}
	return b, nil
}

func notRegular(path string, m os.FileMode) error {
	kind := "a special file"
	switch {
	case m.IsDir():
		kind = "a directory"
	case m&os.ModeNamedPipe != 0:
		kind = "a FIFO"
	case m&os.ModeSocket != 0:
		kind = "a socket"
	case m&os.ModeDevice != 0:
		kind = "a device"
	}
	return fmt.Errorf("%q is %s: %w", path, kind, ErrNotRegular)
}
