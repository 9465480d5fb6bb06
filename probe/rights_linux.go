package probe

import (
	"bufio"
	"bytes"
	"os"
	"runtime"
	"slices"
	"strconv"
	"sync"
	"unsafe"

	"golang.org/x/sys/unix"
)

// self is this process's own file-system identity and whether it may
// take another's (CAP_SETUID and CAP_SETGID in its effective set).
var self = sync.OnceValue(func() struct {
	c      cred
	canSet bool
} {
	s := struct {
		c      cred
		canSet bool
	}{c: cred{uid: os.Geteuid(), gid: os.Getegid()}}
	s.c.groups, _ = os.Getgroups()
	if s.c.uid != 0 {
		// Root's file capabilities go when its fsuid leaves 0; a non-root process
		// that switched would keep them.
		return s
	}
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return s
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		if v, ok := bytes.CutPrefix(sc.Bytes(), []byte("CapEff:")); ok {
			caps, err := strconv.ParseUint(string(bytes.TrimSpace(v)), 16, 64)
			s.canSet = err == nil && caps&(1<<unix.CAP_SETUID) != 0 && caps&(1<<unix.CAP_SETGID) != 0
		}
	}
	return s
})

// asCred runs fn as c on the calling goroutine's locked thread: the raw
// syscalls change that thread only. A thread whose identity could not be
// given back stops the process, or other work would read files as someone else.
func asCred(c cred, fn func()) bool {
	me := self()
	if !me.canSet || (c.uid == me.c.uid && c.gid == me.c.gid && slices.Equal(c.groups, me.c.groups)) {
		fn()
		return true
	}
	runtime.LockOSThread()
	if !setCred(c) {
		restore(me.c)
		return false
	}
	defer restore(me.c) // fn's panic, if any, goes on to the caller's recover
	fn()
	return true
}

// restore gives the locked thread back its own identity and unlocks it.
func restore(c cred) {
	if !setCred(c) {
		panic("probe: the thread's own file-system identity could not be restored after examining a file as its owner")
	}
	runtime.UnlockOSThread()
}

// setCred reports whether each took: setfsuid and setfsgid report no
// failure, so a second call with -1 reads them back.
func setCred(c cred) bool {
	groups := c.groups
	if len(groups) == 0 {
		groups = []int{}
	}
	gs := make([]uint32, len(groups))
	for i, g := range groups {
		gs[i] = uint32(g)
	}
	var p *uint32
	if len(gs) > 0 {
		p = &gs[0]
	}
	if _, _, e := unix.RawSyscall(unix.SYS_SETGROUPS, uintptr(len(gs)), uintptr(unsafe.Pointer(p)), 0); e != 0 {
		return false
	}
	unix.RawSyscall(unix.SYS_SETFSGID, uintptr(c.gid), 0, 0)
	if g, _, _ := unix.RawSyscall(unix.SYS_SETFSGID, ^uintptr(0), 0, 0); int(g) != c.gid {
		return false
	}
	unix.RawSyscall(unix.SYS_SETFSUID, uintptr(c.uid), 0, 0)
	u, _, _ := unix.RawSyscall(unix.SYS_SETFSUID, ^uintptr(0), 0, 0)
	return int(u) == c.uid
}
