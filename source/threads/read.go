package threads

import (
	"errors"
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"syscall"

	"github.com/amp-exporter/amp-exporter/internal/jsonscan"
	"github.com/amp-exporter/amp-exporter/parser/thread"
)

// mmapLimit is the largest file that is mapped rather than read. Mapping
// saves the copy out of the page cache, which is a third of the cost of a
// first scan; larger files (a few per corpus, most of the bytes of none)
// are streamed through the parser's fixed window so that resident memory
// stays bounded whatever their size.
const mmapLimit = 8 << 20

// parseFile parses the open file f of the given size.
func parseFile(p *thread.Parser, f *os.File, size, maxBytes int64) (*thread.Thread, error) {
	if size > 0 && size <= mmapLimit {
		data, err := syscall.Mmap(int(f.Fd()), 0, int(size), syscall.PROT_READ, syscall.MAP_SHARED)
		if err == nil {
			defer syscall.Munmap(data)
			return parseMapped(p, data)
		}
		// Some file systems cannot map files; read them instead.
	}
	// Read at most one byte past the limit: a file that grew past it since
	// stat shows up as truncated JSON and is retried.
	return p.Parse(io.LimitReader(f, maxBytes+1))
}

// errChangedWhileMapped marks a file that shrank while it was mapped.
var errChangedWhileMapped = errors.New("file shrank while it was read")

// parseMapped parses a mapped file. A file truncated by another writer while
// it is mapped makes the kernel raise SIGBUS on the lost pages; with
// SetPanicOnFault that becomes a recoverable panic here, reported as a
// truncated read so the file is retried like any half-written one.
func parseMapped(p *thread.Parser, data []byte) (t *thread.Thread, err error) {
	old := debug.SetPanicOnFault(true)
	defer func() {
		debug.SetPanicOnFault(old)
		p.Forget() // the parser must not keep the mapping past Munmap
		if r := recover(); r != nil {
			if _, isFault := r.(interface{ Addr() uintptr }); !isFault {
				panic(r)
			}
			t, err = nil, fmt.Errorf("%w: %w", errChangedWhileMapped, jsonscan.ErrTruncated)
		}
	}()
	return p.ParseBytes(data)
}
