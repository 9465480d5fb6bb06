package runner

import (
	"errors"
	"os"
	"os/exec"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// childEnd is how the child ended, and what it left.
type childEnd struct {
	code     int
	signal   syscall.Signal
	timedOut bool
	elapsed  time.Duration
	// stderr and stdout are the kept tails (nil: not kept).
	stderr, stdout *tail
	// leftovers are what the child left running; killLeftovers: --kill-leftovers.
	leftovers     []leftover
	killLeftovers bool
}

// supervise waits for the child, forwarding signals and enforcing the
// timeout (SIGTERM, then SIGKILL killAfter later). It reaps by wait4(-1),
// not os/exec: as subreaper it must reap the tree's orphans too, without a
// wait on the child racing it.
func supervise(child *exec.Cmd, sigs, chld <-chan os.Signal, start time.Time, timeout, killAfter time.Duration) childEnd {
	var deadline, kill <-chan time.Time
	if timeout > 0 {
		t := time.NewTimer(timeout - time.Since(start))
		defer t.Stop()
		deadline = t.C
	}
	var end childEnd
	for {
		if ws, ok := reapUntil(child.Process.Pid); ok {
			end.elapsed = time.Since(start)
			end.code = ws.ExitStatus()
			if ws.Signaled() {
				end.code, end.signal = -1, ws.Signal()
			}
			return end
		}
		select {
		case <-chld:
		case s := <-sigs:
			if (s == syscall.SIGINT || s == syscall.SIGQUIT) && ttyDelivered() {
				continue // the child, in our process group, has it already
			}
			_ = child.Process.Signal(s)
		case <-deadline:
			end.timedOut = true
			_ = child.Process.Signal(syscall.SIGTERM)
			k := time.NewTimer(killAfter)
			defer k.Stop()
			kill = k.C
		case <-kill:
			_ = child.Process.Kill()
		}
	}
}

// reapUntil reaps every ended child of the runner, and reports root's wait
// status once it is among them.
func reapUntil(root int) (unix.WaitStatus, bool) {
	for {
		var ws unix.WaitStatus
		pid, err := unix.Wait4(-1, &ws, unix.WNOHANG, nil)
		switch {
		case errors.Is(err, unix.EINTR):
			continue
		case errors.Is(err, unix.ECHILD):
			// Root reaped by someone else: its status is lost; say failed, don't hang.
			return unix.WaitStatus(1 << 8), true
		case err != nil || pid <= 0:
			return 0, false
		case pid == root:
			return ws, true
		}
	}
}

// ttyDelivered reports whether a SIGINT or SIGQUIT most likely came from
// the terminal, which signals the child's process group too: forwarding
// would deliver a second one, which many programs take as "skip cleanup".
func ttyDelivered() bool {
	pgrp := unix.Getpgrp()
	for _, f := range []*os.File{os.Stdin, os.Stdout, os.Stderr} {
		fg, err := unix.IoctlGetInt(int(f.Fd()), unix.TIOCGPGRP)
		if err == nil {
			return fg == pgrp
		}
	}
	return false
}

// signalName is a signal as operators write it ("SIGTERM").
func signalName(sig syscall.Signal) string {
	if n := unix.SignalName(sig); n != "" {
		return n
	}
	return sig.String()
}
