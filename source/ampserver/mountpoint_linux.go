//go:build linux

package ampserver

import "golang.org/x/sys/unix"

// replaceable reports whether target can be replaced by a rename: not
// when it is the root of a mount of its own (a bind-mounted file, as a
// container's `-v file:file` or a Kubernetes subPath makes), where the
// rename fails with EBUSY. A kernel that cannot tell (before 5.8) says
// yes; storeLogin writes in place when the rename fails all the same.
func replaceable(target string) bool {
	var st unix.Statx_t
	if err := unix.Statx(unix.AT_FDCWD, target, 0, unix.STATX_BASIC_STATS, &st); err != nil {
		return true
	}
	if st.Attributes_mask&unix.STATX_ATTR_MOUNT_ROOT == 0 {
		return true
	}
	return st.Attributes&unix.STATX_ATTR_MOUNT_ROOT == 0
}
