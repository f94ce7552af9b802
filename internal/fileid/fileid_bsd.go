//go:build darwin || freebsd || netbsd

package fileid

import (
	"io/fs"
	"syscall"
)

const supported = true

func of(fi fs.FileInfo) ID {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return ID{}
	}
	return ID{
		Inode:   uint64(st.Ino),
		CtimeNs: int64(st.Ctimespec.Sec)*1e9 + int64(st.Ctimespec.Nsec),
	}
}
