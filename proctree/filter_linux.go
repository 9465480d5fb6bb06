//go:build linux

package proctree

import (
	"errors"
	"fmt"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"golang.org/x/sys/unix"
)

// The kernel-side filter (ADR-0045): an eBPF socket program over a hash map
// of every tree's pids, letting through a member's exit, a member's fork
// (adding the child before it can run, so no double fork outraces it), and
// everything while key 0, the open flag, is set. Only user space removes.

// filterMax bounds the map; the Tree stops filtering at half of it, so the
// program's insertions never fail for want of room.
const filterMax = 1 << 16

// filter is the loaded program and its map.
type filter struct {
	prog *ebpf.Program
	m    *ebpf.Map
}

// program is the filter over nlmsghdr, cn_msg, proc_event (what at 36,
// event_data at 52). Stack: fp-24..fp-9 event_data, fp-8 what, fp-4 key.
func program(m *ebpf.Map) asm.Instructions {
	// lookup is r0 = the map's value at fp+off, or 0.
	lookup := func(off int32) asm.Instructions {
		return asm.Instructions{
			asm.LoadMapPtr(asm.R1, m.FD()),
			asm.Mov.Reg(asm.R2, asm.RFP),
			asm.Add.Imm(asm.R2, off),
			asm.FnMapLookupElem.Call(),
		}
	}
	insns := asm.Instructions{asm.Mov.Reg(asm.R6, asm.R1)} // r6 = skb
	for _, ld := range []struct{ from, to, n int32 }{{eventOffset, -8, 4}, {eventOffset + procHdrLen, -24, 16}} {
		insns = append(insns,
			asm.Mov.Reg(asm.R1, asm.R6),
			asm.Mov.Imm(asm.R2, ld.from),
			asm.Mov.Reg(asm.R3, asm.RFP),
			asm.Add.Imm(asm.R3, ld.to),
			asm.Mov.Imm(asm.R4, ld.n),
			asm.FnSkbLoadBytes.Call(),
			asm.JNE.Imm(asm.R0, 0, "drop"), // too short: not an event
		)
	}
	insns = append(insns,
		asm.LoadMem(asm.R7, asm.RFP, -8, asm.Word),
		asm.JEq.Imm32(asm.R7, procEventFork, "fork"),
		asm.JEq.Imm32(asm.R7, -1<<31, "exit"), // procEventExit
		asm.Ja.Label("drop"),

		asm.LoadMem(asm.R1, asm.RFP, -24, asm.Word).WithSymbol("exit"), // process_pid
		asm.LoadMem(asm.R2, asm.RFP, -20, asm.Word),                    // process_tgid
		asm.JNE.Reg(asm.R1, asm.R2, "drop"),                            // a thread's end
	)
	insns = append(insns, lookup(-24)...)
	insns = append(insns,
		asm.JEq.Imm(asm.R0, 0, "open"),
		asm.Ja.Label("pass"),

		asm.LoadMem(asm.R1, asm.RFP, -16, asm.Word).WithSymbol("fork"), // child_pid
		asm.LoadMem(asm.R2, asm.RFP, -12, asm.Word),                    // child_tgid
		asm.JNE.Reg(asm.R1, asm.R2, "drop"),                            // a new thread
	)
	insns = append(insns, lookup(-20)...) // parent_tgid
	insns = append(insns,
		asm.JEq.Imm(asm.R0, 0, "open"),
		asm.StoreImm(asm.RFP, -4, 1, asm.Word), // the value
		asm.LoadMapPtr(asm.R1, m.FD()),
		asm.Mov.Reg(asm.R2, asm.RFP),
		asm.Add.Imm(asm.R2, -16), // child_pid
		asm.Mov.Reg(asm.R3, asm.RFP),
		asm.Add.Imm(asm.R3, -4),
		asm.Mov.Imm(asm.R4, 0), // BPF_ANY
		asm.FnMapUpdateElem.Call(),
		asm.Ja.Label("pass"),

		// Not a member's: through only while key 0 is set.
		asm.StoreImm(asm.RFP, -4, 0, asm.Word).WithSymbol("open"),
	)
	insns = append(insns, lookup(-4)...)
	return append(insns,
		asm.JEq.Imm(asm.R0, 0, "drop"),
		asm.Mov.Imm(asm.R0, 0xffff).WithSymbol("pass"), // keep the whole message
		asm.Return(),
		asm.Mov.Imm(asm.R0, 0).WithSymbol("drop"),
		asm.Return(),
	)
}

// newFilter creates the map and loads the program; without CAP_BPF or eBPF
// it fails and the Tree reads every event.
func newFilter() (*filter, error) {
	m, err := ebpf.NewMap(&ebpf.MapSpec{
		Type: ebpf.Hash, KeySize: 4, ValueSize: 4, MaxEntries: filterMax, Flags: unix.BPF_F_NO_PREALLOC,
	})
	if err != nil {
		return nil, fmt.Errorf("create the filter's map: %w", permission(err))
	}
	p, err := ebpf.NewProgram(&ebpf.ProgramSpec{Type: ebpf.SocketFilter, License: "GPL", Instructions: program(m)})
	if err != nil {
		_ = m.Close()
		return nil, fmt.Errorf("load the filter: %w", permission(err))
	}
	return &filter{prog: p, m: m}, nil
}

// permission words EPERM for this kernel: the library's hint of a low
// RLIMIT_MEMLOCK is wrong since 5.11 (memory cgroups count eBPF memory).
func permission(err error) error {
	if errors.Is(err, unix.EPERM) {
		return fmt.Errorf("%w (eBPF needs CAP_BPF or root)", unix.EPERM)
	}
	return err
}

// add puts pid in the map (0: the open flag).
func (f *filter) add(pid int) error {
	if err := f.m.Update(uint32(pid), uint32(1), ebpf.UpdateAny); err != nil {
		return fmt.Errorf("filter: add pid %d: %w", pid, err)
	}
	return nil
}

// del takes pid out of the map; one not there is no error.
func (f *filter) del(pid int) error {
	if err := f.m.Delete(uint32(pid)); err != nil && !errors.Is(err, ebpf.ErrKeyNotExist) {
		return fmt.Errorf("filter: remove pid %d: %w", pid, err)
	}
	return nil
}

func (f *filter) attach(fd int) error {
	if err := unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_ATTACH_BPF, f.prog.FD()); err != nil {
		return fmt.Errorf("attach the filter: %w", err)
	}
	return nil
}

// close releases the program and the map (an attached program lives on
// with the socket); a second close is harmless.
func (f *filter) close() {
	_ = f.prog.Close()
	_ = f.m.Close()
}
