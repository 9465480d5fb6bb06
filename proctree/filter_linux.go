//go:build linux

package proctree

import (
	"bytes"
	"errors"
	"fmt"
	"runtime"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The kernel-side filter (ADR-0045). The connector sends every listener
// every process's fork and exit; without a filter each one costs this
// process a copy, a wake-up and a lookup, about 11% of a core at 6,000
// forks/s. The filter is an eBPF socket program with a hash map of the
// watched pids (every member of every tree): it runs in the kernel, in the
// forking or exiting task, before the event is queued to our socket, and
// lets through only
//
//   - a process's fork (child pid == child tgid) whose parent's tgid is in
//     the map, adding the child to the map on the spot: the child is in
//     the map before it can run (the kernel sends the fork event before it
//     wakes the child), so its own forks pass too, however fast they come:
//     the race a filter kept by user space has (a double fork before the
//     update) does not exist;
//   - a process's exit (pid == tgid) whose pid is in the map;
//   - every process's fork and exit while the map holds key 0, the "open"
//     flag the Tree sets around a seed or a refresh (a walk of /proc), so
//     that what forks and exits while the walk runs reaches the Tree as it
//     did without a filter; it is taken off once the Tree has read
//     everything queued since (Tree.drained).
//
// User space adds what its own walks find and removes what leaves the
// trees; the program never removes (an exit it let through is removed by
// the Tree, which knows when a pid is in no tree). A pid the program added
// that no tree claims (its parent was forgotten meanwhile) is removed when
// its next event reaches the Tree.

// filterMax bounds the map; the Tree stops filtering (detaches the
// program: every event reaches it, as before) when its members reach half
// of it, so that an insertion by the program never fails for want of room.
const filterMax = 1 << 16

// eBPF helpers and instruction classes not named by x/sys/unix.
const (
	fnMapLookup    = 1  // bpf_map_lookup_elem
	fnMapUpdate    = 2  // bpf_map_update_elem
	fnSkbLoadBytes = 26 // bpf_skb_load_bytes
	bpfJmp         = 0x05
	bpfJa          = 0x00
	bpfLd          = 0x00
	bpfImm         = 0x00
)

// filter is the loaded program, its map, and a buffer for the map's key
// and value that the syscalls point at (on the heap, where nothing moves).
type filter struct {
	prog, m int
	kv      *[2]uint32
}

// bpfInsn is one eBPF instruction (struct bpf_insn).
type bpfInsn struct {
	code uint8
	regs uint8 // dst in the low nibble, src in the high
	off  int16
	imm  int32
}

// asm builds a program with named jump targets.
type asm struct {
	insns  []bpfInsn
	labels map[string]int
	jumps  map[int]string
}

func (a *asm) op(code uint8, dst, src uint8, off int16, imm int32) {
	a.insns = append(a.insns, bpfInsn{code: code, regs: dst | src<<4, off: off, imm: imm})
}

// jmp is a jump of code to label, resolved by done.
func (a *asm) jmp(code uint8, dst, src uint8, imm int32, label string) {
	a.jumps[len(a.insns)] = label
	a.op(code, dst, src, 0, imm)
}

func (a *asm) label(name string) { a.labels[name] = len(a.insns) }

// loadMap is r1 = the map (a 16-byte ld_imm64 with the map's fd).
func (a *asm) loadMap(fd int) {
	a.op(bpfLd|unix.BPF_DW|bpfImm, 1, unix.BPF_PSEUDO_MAP_FD, 0, int32(fd))
	a.op(0, 0, 0, 0, 0)
}

func (a *asm) done() []bpfInsn {
	for at, l := range a.jumps {
		a.insns[at].off = int16(a.labels[l] - at - 1)
	}
	return a.insns
}

// program is the filter over events laid out as nlmsghdr, cn_msg,
// proc_event (what at 36, event_data at 52: fork's parent_pid,
// parent_tgid, child_pid, child_tgid; exit's process_pid, process_tgid).
// The stack: fp-24..fp-9 event_data's first 16 bytes, fp-8 what, fp-4 the
// key or value at hand.
func program(mapFD int) []bpfInsn {
	const (
		alu64 = unix.BPF_ALU64
		mov   = unix.BPF_MOV
		add   = unix.BPF_ADD
		ldxW  = unix.BPF_LDX | unix.BPF_MEM | unix.BPF_W
		stW   = unix.BPF_ST | unix.BPF_MEM | unix.BPF_W
		call  = bpfJmp | unix.BPF_CALL
		exit  = bpfJmp | unix.BPF_EXIT
	)
	a := &asm{labels: map[string]int{}, jumps: map[int]string{}}
	a.op(alu64|mov|unix.BPF_X, 6, 1, 0, 0) // r6 = skb
	for _, ld := range []struct{ from, to, n int32 }{{eventOffset, -8, 4}, {eventOffset + procHdrLen, -24, 16}} {
		a.op(alu64|mov|unix.BPF_X, 1, 6, 0, 0)
		a.op(alu64|mov|unix.BPF_K, 2, 0, 0, ld.from)
		a.op(alu64|mov|unix.BPF_X, 3, 10, 0, 0)
		a.op(alu64|add|unix.BPF_K, 3, 0, 0, ld.to)
		a.op(alu64|mov|unix.BPF_K, 4, 0, 0, ld.n)
		a.op(call, 0, 0, 0, fnSkbLoadBytes)
		a.jmp(bpfJmp|unix.BPF_JNE|unix.BPF_K, 0, 0, 0, "drop") // too short: not an event
	}
	a.op(ldxW, 7, 10, -8, 0)
	a.jmp(unix.BPF_JMP32|unix.BPF_JEQ|unix.BPF_K, 7, 0, procEventFork, "fork")
	a.jmp(unix.BPF_JMP32|unix.BPF_JEQ|unix.BPF_K, 7, 0, int32(-1<<31), "exit") // procEventExit
	a.jmp(bpfJmp|bpfJa, 0, 0, 0, "drop")

	a.label("exit")
	a.op(ldxW, 1, 10, -24, 0)                              // process_pid
	a.op(ldxW, 2, 10, -20, 0)                              // process_tgid
	a.jmp(bpfJmp|unix.BPF_JNE|unix.BPF_X, 1, 2, 0, "drop") // a thread's end
	a.loadMap(mapFD)
	a.op(alu64|mov|unix.BPF_X, 2, 10, 0, 0)
	a.op(alu64|add|unix.BPF_K, 2, 0, 0, -24)
	a.op(call, 0, 0, 0, fnMapLookup)
	a.jmp(bpfJmp|unix.BPF_JEQ|unix.BPF_K, 0, 0, 0, "open")
	a.jmp(bpfJmp|bpfJa, 0, 0, 0, "pass")

	a.label("fork")
	a.op(ldxW, 1, 10, -16, 0)                              // child_pid
	a.op(ldxW, 2, 10, -12, 0)                              // child_tgid
	a.jmp(bpfJmp|unix.BPF_JNE|unix.BPF_X, 1, 2, 0, "drop") // a new thread
	a.loadMap(mapFD)
	a.op(alu64|mov|unix.BPF_X, 2, 10, 0, 0)
	a.op(alu64|add|unix.BPF_K, 2, 0, 0, -20) // parent_tgid
	a.op(call, 0, 0, 0, fnMapLookup)
	a.jmp(bpfJmp|unix.BPF_JEQ|unix.BPF_K, 0, 0, 0, "open")
	a.op(stW, 10, 0, -4, 1) // the value
	a.loadMap(mapFD)
	a.op(alu64|mov|unix.BPF_X, 2, 10, 0, 0)
	a.op(alu64|add|unix.BPF_K, 2, 0, 0, -16) // child_pid
	a.op(alu64|mov|unix.BPF_X, 3, 10, 0, 0)
	a.op(alu64|add|unix.BPF_K, 3, 0, 0, -4)
	a.op(alu64|mov|unix.BPF_K, 4, 0, 0, 0) // BPF_ANY
	a.op(call, 0, 0, 0, fnMapUpdate)
	a.jmp(bpfJmp|bpfJa, 0, 0, 0, "pass")

	a.label("open") // not a member's: through only while key 0 is set
	a.op(stW, 10, 0, -4, 0)
	a.loadMap(mapFD)
	a.op(alu64|mov|unix.BPF_X, 2, 10, 0, 0)
	a.op(alu64|add|unix.BPF_K, 2, 0, 0, -4)
	a.op(call, 0, 0, 0, fnMapLookup)
	a.jmp(bpfJmp|unix.BPF_JEQ|unix.BPF_K, 0, 0, 0, "drop")

	a.label("pass")
	a.op(alu64|mov|unix.BPF_K, 0, 0, 0, 0xffff) // keep the whole message
	a.op(exit, 0, 0, 0, 0)
	a.label("drop")
	a.op(alu64|mov|unix.BPF_K, 0, 0, 0, 0)
	a.op(exit, 0, 0, 0, 0)
	return a.done()
}

// bpf is the bpf(2) call on an attribute block.
func bpf(cmd uintptr, attr unsafe.Pointer, size uintptr) (int, error) {
	r, _, errno := unix.Syscall(unix.SYS_BPF, cmd, uintptr(attr), size)
	if errno != 0 {
		return -1, errno
	}
	return int(r), nil
}

// newFilter creates the map and loads the program. Without the privilege
// (CAP_BPF or CAP_SYS_ADMIN) or a kernel with eBPF, it fails and the Tree
// reads every event, as without a filter.
func newFilter() (*filter, error) {
	mattr := &struct {
		mapType, keySize, valueSize, maxEntries, flags uint32
		_                                              [12]uint32
	}{mapType: unix.BPF_MAP_TYPE_HASH, keySize: 4, valueSize: 4, maxEntries: filterMax, flags: unix.BPF_F_NO_PREALLOC}
	m, err := bpf(unix.BPF_MAP_CREATE, unsafe.Pointer(mattr), unsafe.Sizeof(*mattr))
	if err != nil {
		return nil, fmt.Errorf("create the filter's map: %w", err)
	}
	insns := program(m)
	license := []byte("GPL\x00")
	logBuf := make([]byte, 8192)
	pattr := &struct {
		progType, insnCnt uint32
		insns, license    uint64
		logLevel, logSize uint32
		logBuf            uint64
		kernVersion, _    uint32
		_                 [8]uint64
	}{
		progType: unix.BPF_PROG_TYPE_SOCKET_FILTER, insnCnt: uint32(len(insns)),
		insns: uint64(uintptr(unsafe.Pointer(&insns[0]))), license: uint64(uintptr(unsafe.Pointer(&license[0]))),
		logLevel: 1, logSize: uint32(len(logBuf)), logBuf: uint64(uintptr(unsafe.Pointer(&logBuf[0]))),
	}
	p, err := bpf(unix.BPF_PROG_LOAD, unsafe.Pointer(pattr), unsafe.Sizeof(*pattr))
	runtime.KeepAlive(insns)
	runtime.KeepAlive(license)
	runtime.KeepAlive(logBuf)
	if err != nil {
		_ = unix.Close(m)
		log, _, _ := bytes.Cut(logBuf, []byte{0})
		return nil, fmt.Errorf("load the filter: %w (verifier: %q)", err, log)
	}
	return &filter{prog: p, m: m, kv: new([2]uint32)}, nil
}

// elem updates (add) or deletes (del) key in the map.
func (f *filter) elem(cmd uintptr, key uint32) error {
	f.kv[0], f.kv[1] = key, 1
	attr := &struct {
		mapFD, _          uint32
		key, value, flags uint64
	}{mapFD: uint32(f.m), key: uint64(uintptr(unsafe.Pointer(&f.kv[0])))}
	if cmd == unix.BPF_MAP_UPDATE_ELEM {
		// Only an update has a value: the kernel refuses a delete whose
		// attributes hold more than the key.
		attr.value = uint64(uintptr(unsafe.Pointer(&f.kv[1])))
	}
	_, err := bpf(cmd, unsafe.Pointer(attr), unsafe.Sizeof(*attr))
	runtime.KeepAlive(f.kv)
	return err
}

// add puts pid in the map (0: the open flag).
func (f *filter) add(pid int) error {
	if err := f.elem(unix.BPF_MAP_UPDATE_ELEM, uint32(pid)); err != nil {
		return fmt.Errorf("filter: add pid %d: %w", pid, err)
	}
	return nil
}

// del takes pid out of the map; one not there is no error.
func (f *filter) del(pid int) error {
	if err := f.elem(unix.BPF_MAP_DELETE_ELEM, uint32(pid)); err != nil && !errors.Is(err, unix.ENOENT) {
		return fmt.Errorf("filter: remove pid %d: %w", pid, err)
	}
	return nil
}

// attach sets the program on the socket fd.
func (f *filter) attach(fd int) error {
	if err := unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_ATTACH_BPF, f.prog); err != nil {
		return fmt.Errorf("attach the filter: %w", err)
	}
	return nil
}

// close releases the program and the map (the socket keeps its own
// reference to an attached program until it is closed or detached).
func (f *filter) close() {
	// Closed once: a second close of a number would close whatever took
	// it since.
	if f.prog >= 0 {
		_ = unix.Close(f.prog)
		f.prog = -1
	}
	if f.m >= 0 {
		_ = unix.Close(f.m)
		f.m = -1
	}
}
