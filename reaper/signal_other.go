//go:build !linux

package reaper

import "syscall"

// signalProcess sends sig to pid after checking it is still the process
// started at ticks: without pidfds a reuse in between cannot be ruled out.
func (r *Reaper) signalProcess(pid int, ticks uint64, sig syscall.Signal) error {
	if r.Signal != nil {
		return r.Signal(pid, int(sig))
	}
	if _, err := r.Prober.Process(pid, ticks); err != nil {
		return err
	}
	return syscall.Kill(pid, sig)
}
