//go:build unix

package backfill

import (
	"errors"
	"io"
	"io/fs"
	"syscall"
)

// threadFile is an open thread file read with plain system calls. An
// *os.File costs more than its open(2): it offers the descriptor to the
// runtime's poller (which refuses a regular file) and sets its flags, a
// dozen microseconds a file; a backfill or report opens each of tens of
// thousands of thread files once and reads it to the end, and needs none
// of it.
type threadFile struct {
	fd   int
	path string
}

// openThreadFile opens a thread file for reading and returns its size.
func openThreadFile(path string) (*threadFile, int64, error) {
	var fd int
	var err error
	for {
		fd, err = syscall.Open(path, syscall.O_RDONLY|syscall.O_CLOEXEC, 0)
		if !errors.Is(err, syscall.EINTR) {
			break
		}
	}
	if err != nil {
		return nil, 0, &fs.PathError{Op: "open", Path: path, Err: err}
	}
	var st syscall.Stat_t
	if err := syscall.Fstat(fd, &st); err != nil {
		syscall.Close(fd)
		return nil, 0, &fs.PathError{Op: "stat", Path: path, Err: err}
	}
	return &threadFile{fd: fd, path: path}, st.Size, nil
}

func (f *threadFile) Read(b []byte) (int, error) {
	if len(b) == 0 {
		return 0, nil
	}
	for {
		n, err := syscall.Read(f.fd, b)
		switch {
		case errors.Is(err, syscall.EINTR):
			continue
		case err != nil:
			return 0, &fs.PathError{Op: "read", Path: f.path, Err: err}
		case n == 0:
			return 0, io.EOF
		}
		return n, nil
	}
}

func (f *threadFile) Close() error { return syscall.Close(f.fd) }
