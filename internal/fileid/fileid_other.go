//go:build !linux && !darwin && !freebsd && !netbsd

package fileid

import "io/fs"

// No inode or ctime in the stat result here (Windows keeps a file index
// only behind an open handle): callers rely on size, mtime and content.
const supported = false

func of(fs.FileInfo) ID { return ID{} }
