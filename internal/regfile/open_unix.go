//go:build unix

package regfile

import (
	"os"
	"syscall"
)

// open opens without blocking: O_NONBLOCK makes opening a FIFO for reading
// return at once (no writer needed); for a regular file it changes
// nothing.
func open(path string) (*os.File, error) {
	return os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
}
