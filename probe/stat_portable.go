//go:build !(linux && (amd64 || arm64 || riscv64))

package probe

import "golang.org/x/sys/unix"

// fstatat stats a NUL-terminated path through unix.Fstatat where the raw
// newfstatat cannot be used as is.
func fstatat(p []byte, st *unix.Stat_t, flags int) error {
	return unix.Fstatat(unix.AT_FDCWD, string(p[:len(p)-1]), st, flags)
}
