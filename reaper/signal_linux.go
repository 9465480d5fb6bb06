package reaper

import (
	"fmt"
	"syscall"

	"golang.org/x/sys/unix"
)

// signalProcess sends sig to pid, the process started at ticks (0: not
// recorded), through a pidfd: the process is checked after the pidfd is
// opened, so a pid reused between the guards' last look and the signal
// gets nothing (the old process's pidfd signals only it). r.Signal, when
// set (tests), is called instead.
func (r *Reaper) signalProcess(pid int, ticks uint64, sig syscall.Signal) error {
	if r.Signal != nil {
		return r.Signal(pid, int(sig))
	}
	fd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		return fmt.Errorf("pidfd_open %d: %w", pid, err)
	}
	defer unix.Close(fd) //nolint:errcheck // a read-only handle
	if _, err := r.Prober.Process(pid, ticks); err != nil {
		return err
	}
	return unix.PidfdSendSignal(fd, sig, nil, 0)
}
