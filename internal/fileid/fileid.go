// Package fileid reads a file's identity (inode) and change time (ctime)
// from its stat result, where the operating system has them. The per-OS
// code lives in build-tagged files; elsewhere (Windows, Plan 9, ...) the
// identity is the zero ID and callers fall back on size, mtime and content.
package fileid

import "io/fs"

// ID is what a stat result says about a file beyond size and mtime.
// A zero field means "not known on this platform", never "changed".
type ID struct {
	Inode   uint64 // inode number; 0 if unknown
	CtimeNs int64  // status change time, ns since the epoch; 0 if unknown
}

// Supported says whether Of returns real inodes and ctimes on this
// platform.
const Supported = supported

// Of returns the identity in fi.Sys(), or the zero ID when fi carries
// none (a platform without inodes, or a FileInfo not from the OS).
func Of(fi fs.FileInfo) ID {
	if fi == nil {
		return ID{}
	}
	return of(fi)
}
