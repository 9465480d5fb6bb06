package runner

import (
	"os"
	"os/exec"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// childEnd is how the child ended.
type childEnd struct {
	code     int
	signal   syscall.Signal
	timedOut bool
	elapsed  time.Duration
}

// supervise waits for the child, forwarding signals to it and enforcing
// the timeout: SIGTERM at the deadline, SIGKILL killAfter later.
func supervise(child *exec.Cmd, sigs <-chan os.Signal, start time.Time, timeout, killAfter time.Duration) childEnd {
	done := make(chan struct{})
	var waitErr error
	go func() { waitErr = child.Wait(); close(done) }()

	var deadline, kill <-chan time.Time
	if timeout > 0 {
		t := time.NewTimer(timeout - time.Since(start))
		defer t.Stop()
		deadline = t.C
	}
	var end childEnd
	for {
		select {
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
		case <-done:
			end.elapsed = time.Since(start)
			end.code = child.ProcessState.ExitCode()
			if ws, ok := child.ProcessState.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
				end.signal = ws.Signal()
			}
			_ = waitErr // the exit status above says everything Wait's error does
			return end
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
