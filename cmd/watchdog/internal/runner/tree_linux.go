//go:build linux

package runner

import (
	"errors"
	"fmt"
	"os"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"watchdog/probe"
	"watchdog/proctree"
)

// killWait bounds the wait for SIGKILLed leftovers; one stuck in
// uninterruptible sleep is reported as still running.
const killWait = 5 * time.Second

// becomeSubreaper makes the runner its tree's child subreaper, so the
// child's orphans (double forks, background jobs) come to the runner, to
// be found at the end and reaped.
func becomeSubreaper() error {
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("PR_SET_CHILD_SUBREAPER: %w", err)
	}
	return nil
}

// reapOrphans reaps every ended child of the runner: once the child is
// reaped, the rest are its tree's orphans, never to be left zombies.
func reapOrphans() {
	for {
		var ws unix.WaitStatus
		pid, err := unix.Wait4(-1, &ws, unix.WNOHANG, nil)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if pid <= 0 || err != nil {
			return // none ended (0), or no children left (ECHILD)
		}
	}
}

// pidfdOf opens a pidfd for p and then checks p's start ticks, so a signal
// through it can never reach a process that reused the pid.
func pidfdOf(h *probe.Host, p proctree.Proc) (int, bool) {
	fd, err := unix.PidfdOpen(p.PID, 0)
	if err != nil {
		return -1, false
	}
	if !verified(h, p) {
		unix.Close(fd)
		return -1, false
	}
	return fd, true
}

// endLeftovers ends what the child left running, as systemd's
// KillMode=control-group does: SIGTERM (and SIGCONT), grace, then SIGKILL
// to those still there and any started meanwhile. Only the runner's own
// descendants are signalled, each through a verified pidfd.
func endLeftovers(procs []proctree.Proc, grace time.Duration) []leftover {
	h := probe.NewHost()
	out := make([]leftover, 0, len(procs))
	var fds []int
	defer func() {
		for _, fd := range fds {
			if fd >= 0 {
				unix.Close(fd)
			}
		}
	}()
	start := time.Now()
	known := map[int]uint64{}
	send := func(i int, sig syscall.Signal) {
		if fds[i] >= 0 && !out[i].gone && unix.PidfdSendSignal(fds[i], sig, nil, 0) == nil {
			out[i].signal = sig
		}
	}
	add := func(p proctree.Proc) {
		known[p.PID] = p.StartTicks
		fd, ok := pidfdOf(h, p)
		out = append(out, leftover{proc: p, gone: !ok})
		fds = append(fds, fd)
	}
	for _, p := range procs {
		add(p)
		send(len(out)-1, syscall.SIGTERM)
		if fds[len(out)-1] >= 0 {
			_ = unix.PidfdSendSignal(fds[len(out)-1], unix.SIGCONT, nil, 0)
		}
	}
	waitGone(out, fds, start, start.Add(grace))
	for i := range out {
		send(i, syscall.SIGKILL)
	}
	// What the leftovers started while they were asked to stop.
	for _, p := range listLeftovers() {
		if t, ok := known[p.PID]; ok && t == p.StartTicks {
			continue
		}
		add(p)
		send(len(out)-1, syscall.SIGKILL)
	}
	waitGone(out, fds, start, time.Now().Add(killWait))
	reapOrphans()
	return out
}

// waitGone waits, until deadline at most, for the leftovers to exit
// (pidfds turn readable), reaping as they go; times count from start.
func waitGone(ls []leftover, fds []int, start, deadline time.Time) {
	for {
		var pfds []unix.PollFd
		var idx []int
		for i := range ls {
			if !ls[i].gone && fds[i] >= 0 {
				pfds = append(pfds, unix.PollFd{Fd: int32(fds[i]), Events: unix.POLLIN})
				idx = append(idx, i)
			}
		}
		left := time.Until(deadline)
		if len(pfds) == 0 || left <= 0 {
			return
		}
		n, err := unix.Poll(pfds, int(left.Milliseconds())+1)
		if err != nil && !errors.Is(err, unix.EINTR) {
			return
		}
		for j := 0; n > 0 && j < len(pfds); j++ {
			if pfds[j].Revents != 0 {
				ls[idx[j]].gone = true
				ls[idx[j]].after = time.Since(start)
			}
		}
		reapOrphans()
	}
}

// keepsTerminal says whether f is a terminal, which is passed to the child
// untouched (a pipe would change colours, buffering, job control) and not
// kept.
func keepsTerminal(f *os.File) bool {
	_, err := unix.IoctlGetTermios(int(f.Fd()), unix.TCGETS)
	return err == nil
}
