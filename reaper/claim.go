package reaper

import (
	"errors"
	"fmt"
	"slices"

	"watchdog/probe"
	"watchdog/transitions"
)

// PIDGuard is the write path's proof of who a registered pid runs as, read
// between two looks at its start ticks so a reused pid fails (ADR-0062).
type PIDGuard struct {
	Host *probe.Host
	// Daemon is the serving daemon's pid (0: none known, as for the CLI
	// on the store, whose own shell may be work it registers).
	Daemon int
}

// CheckPID implements transitions.PIDChecker.
func (g PIDGuard) CheckPID(pid int, startTicks uint64) (int, error) {
	if pid <= 2 {
		return 0, fmt.Errorf("%w: pid %d is the system's own (init or kthreadd), never an entity's", transitions.ErrPIDRefused, pid)
	}
	if g.Daemon > 0 && (pid == g.Daemon || slices.Contains(g.Host.Ancestors(g.Daemon), pid)) {
		return 0, fmt.Errorf("%w: pid %d is the watchdog daemon or one of its ancestors, never an entity's", transitions.ErrPIDRefused, pid)
	}
	// A zombie counts: exec registers a child that may have exited
	// already, and its owner and start are still the kernel's to read.
	_, ticks, err := g.Host.StartOf(pid)
	if err == nil && startTicks != 0 && ticks != startTicks {
		err = probe.ErrNoSuchProcess
	}
	if err != nil {
		return 0, g.gone(pid, err)
	}
	o, err := g.Host.Owner(pid)
	if err != nil {
		return 0, g.gone(pid, err)
	}
	if o.PPID == 2 {
		return 0, fmt.Errorf("%w: pid %d is a kernel thread, never an entity's", transitions.ErrPIDRefused, pid)
	}
	// The same process after the owner's read: not a reuse of its pid.
	if _, again, err := g.Host.StartOf(pid); err != nil || again != ticks {
		return 0, g.gone(pid, probe.ErrNoSuchProcess)
	}
	return o.RealUID, nil
}

func (g PIDGuard) gone(pid int, err error) error {
	if errors.Is(err, probe.ErrNoSuchProcess) {
		return fmt.Errorf("%w: pid %d is not running (or is no longer the process registered)", transitions.ErrPIDGone, pid)
	}
	return fmt.Errorf("%w: pid %d: %v", transitions.ErrPIDGone, pid, err)
}
