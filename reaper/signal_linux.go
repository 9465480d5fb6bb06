package reaper

import (
	"fmt"
	"syscall"

	"golang.org/x/sys/unix"
)

// signalProcess signals through a pidfd checked after it is opened, so a
// pid reused since the guards' last look gets nothing.
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
