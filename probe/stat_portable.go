//go:build !(linux && (amd64 || arm64 || riscv64))

package probe

import "golang.org/x/sys/unix"

// fstatat stats a NUL-terminated path (p ends with its NUL). Where the raw
// newfstatat cannot be used as is (32-bit Linux, whose Stat_t needs
// fstatat64; other systems), it goes through unix.Fstatat and pays for the
// string copy.
func fstatat(p []byte, st *unix.Stat_t, flags int) error {
	return unix.Fstatat(unix.AT_FDCWD, string(p[:len(p)-1]), st, flags)
}
