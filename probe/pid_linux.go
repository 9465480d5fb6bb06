//go:build linux

package probe

import (
	"bytes"
	"math"
	"strconv"
	"unsafe"

	"golang.org/x/sys/unix"
)

// newProcessReader picks the /proc reader on Linux (see processReader).
func newProcessReader(procRoot string) processReader {
	return &procfsReader{root: procRoot, confirmGone: procRoot == DefaultProcRoot}
}

// procfsReader reads /proc/<pid>/stat with raw syscalls into a scratch
// buffer, below os.Open on purpose: nothing is allocated (ADR-0004).
type procfsReader struct {
	root string
	// confirmGone: /proc's ENOENT is confirmed with kill(pid, 0), as hidepid
	// hides live processes the same way; fixture pids are fake.
	confirmGone bool
}

func (r *procfsReader) ticks() bool { return true }

// gone is kill(pid, 0) saying ESRCH; a fixture root cannot tell.
func (r *procfsReader) gone(pid int) bool { return r.confirmGone && unix.Kill(pid, 0) == unix.ESRCH }

func (r *procfsReader) read(pid int, sc *scratch) (procStat, error) {
	p := append(sc.path[:0], r.root...)
	p = append(p, '/')
	p = strconv.AppendInt(p, int64(pid), 10)
	p = append(p, "/stat\x00"...)
	sc.path = p

	fd, err := openat(p, unix.O_RDONLY|unix.O_CLOEXEC)
	if err != nil {
		switch err {
		case unix.ENOENT, unix.ESRCH, unix.ENOTDIR:
			if r.confirmGone {
				if kerr := unix.Kill(pid, 0); kerr == nil || kerr == unix.EPERM {
					return procStat{}, errHidden
				}
			}
			return procStat{}, ErrNoSuchProcess
		case unix.EACCES, unix.EPERM:
			return procStat{}, errPermission
		}
		return procStat{}, err
	}
	n := 0
	for n < len(sc.stat) {
		m, err := unix.Read(fd, sc.stat[n:])
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			unix.Close(fd)
			if err == unix.ESRCH || err == unix.ENOENT {
				// The task exited and was reaped between open and read.
				return procStat{}, errVanished
			}
			if err == unix.EACCES || err == unix.EPERM {
				return procStat{}, errPermission
			}
			return procStat{}, err
		}
		n += m
		if m == 0 || n < len(sc.stat) {
			// A short read means we have it all: save the read that returns 0.
			break
		}
	}
	unix.Close(fd)
	if n == 0 {
		return procStat{}, errVanished
	}
	return parseStat(sc.stat[:n])
}

// openat opens a NUL-terminated path without converting it to a string
// (unix.Open would copy it into a new allocation on every call).
func openat(path []byte, flags int) (int, error) {
	for {
		atFDCWD := unix.AT_FDCWD // a negative constant: convert at run time
		fd, _, errno := unix.Syscall6(unix.SYS_OPENAT, uintptr(atFDCWD),
			uintptr(unsafe.Pointer(&path[0])), uintptr(flags), 0, 0, 0)
		if errno == unix.EINTR {
			continue
		}
		if errno != 0 {
			return -1, errno
		}
		return int(fd), nil
	}
}

// parseStat parses in place; comm may hold spaces and ')', so fields are
// found from the LAST ')'.
func parseStat(b []byte) (procStat, error) {
	end := -1
	for i := 0; ; {
		j := bytes.IndexByte(b[i:], ')')
		if j < 0 {
			break
		}
		end = i + j
		i = end + 1
	}
	if end < 0 || end+3 >= len(b) || b[end+1] != ' ' || b[end+3] != ' ' {
		return procStat{}, errUnparsable
	}
	ps := procStat{state: b[end+2]}
	rest := b[end+4:] // from ppid on
	field, start := 4, 0
	for i := 0; i < len(rest); i++ {
		if c := rest[i]; c != ' ' && c != '\n' {
			continue
		}
		switch field {
		case 4:
			v, ok := parseUint(rest[start:i])
			if !ok || v > math.MaxInt32 {
				return procStat{}, errUnparsable
			}
			ps.ppid = int(v)
		case 22:
			v, ok := parseUint(rest[start:i])
			if !ok {
				return procStat{}, errUnparsable
			}
			ps.startTicks = v
			return ps, nil
		}
		field++
		start = i + 1
	}
	return procStat{}, errUnparsable
}

// parseUint parses a decimal without the string conversion strconv needs.
func parseUint(b []byte) (uint64, bool) {
	if len(b) == 0 || len(b) > 19 {
		return 0, false
	}
	var v uint64
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		v = v*10 + uint64(c-'0')
	}
	return v, true
}
