//go:build !unix

package regfile

import "os"

// open checks the path before opening it (there is no O_NONBLOCK here);
// Open checks the open file again.
func open(path string) (*os.File, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, notRegular(path, fi.Mode())
	}
	return os.Open(path)
}
