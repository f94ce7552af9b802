//go:build !unix

package backfill

import "os"

// threadFile is an open thread file.
type threadFile = os.File

// openThreadFile opens a thread file for reading and returns its size.
func openThreadFile(path string) (*threadFile, int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, 0, err
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, 0, err
	}
	return f, fi.Size(), nil
}
