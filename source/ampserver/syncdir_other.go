//go:build !unix

package ampserver

// syncDir: directories cannot be synced here; the rename is what the
// platform gives.
func syncDir(string) {}
