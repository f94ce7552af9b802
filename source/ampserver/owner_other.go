//go:build !unix

package ampserver

import "os"

// keepOwner: a replaced file's owner is the platform's business here.
func keepOwner(*os.File, string) error { return nil }

// unlinked: an open file keeps its name here.
func unlinked(*os.File) error { return nil }
