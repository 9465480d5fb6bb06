package runner

import (
	"errors"
	"os"
	"os/exec"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// childEnd is how the child ended, and what it left: the tail of its
// output and the processes still running at its end.
type childEnd struct {
	code     int
	signal   syscall.Signal
	timedOut bool
	elapsed  time.Duration
	// stderr and stdout are the kept tails (nil: not kept).
	stderr, stdout *tail
	// leftovers are what the child left running; killLeftovers says
	// whether the runner was to end them (--kill-leftovers).
	leftovers     []leftover
	killLeftovers bool
}

// supervise waits for the child, forwarding signals to it and enforcing
// the timeout: SIGTERM at the deadline, SIGKILL killAfter later. The
// runner reaps the child itself (wait4 of any child at each SIGCHLD on
// chld), not through os/exec: as its subreaper it must also reap the
// orphans of the child's tree that die while the child runs, and a
// wait4(-1) loop does both without a wait on the child racing it.
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
			// A child of the runner ended: reaped at the top of the loop.
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

// reapUntil reaps every ended child of the runner, and reports the wait
// status of root once it is among them. An orphan reparented to the
// runner is reaped and forgotten.
func reapUntil(root int) (unix.WaitStatus, bool) {
	for {
		var ws unix.WaitStatus
		pid, err := unix.Wait4(-1, &ws, unix.WNOHANG, nil)
		switch {
		case errors.Is(err, unix.EINTR):
			continue
		case errors.Is(err, unix.ECHILD):
			// No child at all: root was reaped by someone else, which
			// nothing in the runner does. Its status is lost; say it
			// failed rather than wait for ever.
			return unix.WaitStatus(1 << 8), true
		case err != nil || pid <= 0:
			return 0, false
		case pid == root:
			return ws, true
		}
	}
}

// ttyDelivered reports whether a SIGINT (or SIGQUIT) the runner received
// most likely came from its terminal (Ctrl-C, Ctrl-\): the runner is in
// the foreground process group of the terminal on one of its standard
// streams. The terminal signals that whole group, the child included (the
// runner does not give it a group of its own, so that it can still read
// the terminal), so forwarding would deliver a second SIGINT, which many
// programs take as "quit now, skip the cleanup". A SIGINT sent to the
// runner alone while it holds the terminal's foreground (kill -INT) is
// then not forwarded: rare, and SIGTERM always is.
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

// signalName is a signal as operators write it ("SIGTERM"), not Go's
// description ("terminated").
func signalName(sig syscall.Signal) string {
	if n := unix.SignalName(sig); n != "" {
		return n
	}
	return sig.String()
}
