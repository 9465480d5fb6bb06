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

// killWait bounds the wait for SIGKILLed leftovers to be gone: the kernel
// ends them at once unless one is stuck in an uninterruptible sleep, which
// the end then reports as still running rather than waiting on it.
const killWait = 5 * time.Second

// becomeSubreaper makes the runner the child subreaper of its process
// tree (PR_SET_CHILD_SUBREAPER): an orphan of the child's tree (a
// double-forked daemon, a shell's background job after the shell exits)
// is reparented to the runner, not to init, so the runner can find it at
// the child's end, and must reap it when it dies.
func becomeSubreaper() error {
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("PR_SET_CHILD_SUBREAPER: %w", err)
	}
	return nil
}

// reapOrphans reaps every child of the runner that has ended: once the
// child itself has been reaped, every other child is an orphan of its
// tree, reparented to the runner, which must not leave them zombies.
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

// pidfdOf opens a pidfd for p and then checks that the pid is still p's
// (its start ticks): the pidfd then stays p's whatever happens to the pid,
// so a signal sent through it can never reach a process that reused it.
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
// KillMode=control-group does: SIGTERM (and SIGCONT, so a stopped one can
// act on it) to each, up to grace for them to exit, then SIGKILL to each
// still there and to any started meanwhile. Only the runner's own
// descendants are signalled (listLeftovers), each through a pidfd opened
// and checked against its start ticks first. Orphans are reaped as they
// die. It returns what became of each.
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

// waitGone waits, until deadline at most, for the leftovers not yet gone
// to exit (each pidfd becomes readable at its process's exit), reaping
// the runner's children as they go; each one's time is counted from
// start, the SIGTERM.
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

// keepsTerminal says whether f is a terminal, which the child is given as
// it is: a pipe in its place would change what the child does (colours,
// line buffering, prompts, job control), so a terminal's output is passed
// through untouched and none of it is kept.
func keepsTerminal(f *os.File) bool {
	_, err := unix.IoctlGetTermios(int(f.Fd()), unix.TCGETS)
	return err == nil
}
