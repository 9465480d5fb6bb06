//go:build linux && (amd64 || arm64 || riscv64)

package probe

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// fstatat stats a NUL-terminated path with one raw newfstatat, avoiding
// unix.Fstatat's string copy on the sweep's path.
func fstatat(p []byte, st *unix.Stat_t, flags int) error {
	atFDCWD := unix.AT_FDCWD // a negative constant: convert at run time
	_, _, errno := unix.Syscall6(unix.SYS_NEWFSTATAT, uintptr(atFDCWD),
		uintptr(unsafe.Pointer(&p[0])), uintptr(unsafe.Pointer(st)), uintptr(flags), 0, 0)
	if errno != 0 {
		return errno
	}
	return nil
}
