package probe

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
	"time"
)

// Process is one process as a finding names it (a leftover descendant of
// an entity's process): pid, name, start and memory, read when asked.
type Process struct {
	PID int
	// StartTicks is the kernel's start time in clock ticks after boot (0
	// where the platform has none); with the pid it names the process.
	StartTicks uint64
	StartTime  time.Time
	// Comm is the process's name (/proc/<pid>/comm, 15 bytes at most).
	Comm string
	// RSS is the resident set in bytes, 0 when it could not be read.
	RSS uint64
}

// Process reads pid's facts; a pid with another start than startTicks (reused)
// or a zombie wraps ErrNoSuchProcess.
func (h *Host) Process(pid int, startTicks uint64) (Process, error) {
	if pid <= 0 {
		return Process{}, fmt.Errorf("process %d: not a process id", pid)
	}
	sc := getScratch()
	defer putScratch(sc)
	r := h.processes()
	ps, err := r.read(pid, sc)
	if err != nil {
		return Process{}, fmt.Errorf("process %d: %w", pid, err)
	}
	switch {
	case ps.state == 'Z' || ps.state == 'X':
		return Process{}, fmt.Errorf("process %d: %w (zombie)", pid, ErrNoSuchProcess)
	case startTicks != 0 && r.ticks() && ps.startTicks != startTicks:
		return Process{}, fmt.Errorf("process %d: %w (started at tick %d, not %d)", pid, ErrNoSuchProcess, ps.startTicks, startTicks)
	}
	p := Process{PID: pid, StartTicks: ps.startTicks, StartTime: ps.startTime}
	if r.ticks() {
		if bt, err := h.bootTime(); err == nil {
			p.StartTime = startFromTicks(bt, ps.startTicks)
		}
	}
	dir := h.procRoot() + "/" + strconv.Itoa(pid)
	// The name and the memory are best effort: the process may go
	// between the reads, and its identity above is what counts.
	if b, err := os.ReadFile(dir + "/comm"); err == nil {
		p.Comm = string(bytes.TrimSpace(b))
	}
	if b, err := os.ReadFile(dir + "/statm"); err == nil {
		// statm: size resident shared ... in pages.
		if f := bytes.Fields(b); len(f) > 1 {
			if pages, err := strconv.ParseUint(string(f[1]), 10, 64); err == nil {
				p.RSS = pages * uint64(os.Getpagesize())
			}
		}
	}
	return p, nil
}
