//go:build linux && (amd64 || arm64 || riscv64)

package probe

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// fstatat stats a NUL-terminated path (p ends with its NUL) with one raw
// newfstatat. On these architectures unix.Fstatat is exactly this syscall
// with the same Stat_t, but takes a Go string and copies it into a fresh
// allocation first; the sweep stats three files per entity, so the copy is
// worth avoiding.
func fstatat(p []byte, st *unix.Stat_t, flags int) error {
	atFDCWD := unix.AT_FDCWD // a negative constant: convert at run time
	_, _, errno := unix.Syscall6(unix.SYS_NEWFSTATAT, uintptr(atFDCWD),
		uintptr(unsafe.Pointer(&p[0])), uintptr(unsafe.Pointer(st)), uintptr(flags), 0, 0)
	if errno != 0 {
		return errno
	}
	return nil
}
