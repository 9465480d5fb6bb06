package main

import (
	"os"

	"golang.org/x/sys/unix"
)

// ttyDelivered reports whether a SIGINT (or SIGQUIT) exec received most
// likely came from its terminal (Ctrl-C, Ctrl-\): exec runs in the foreground process group of the
// terminal on one of its standard streams. The terminal signals that whole
// group, the child included (exec does not give it a group of its own, so
// that it can still read the terminal), so forwarding would deliver a
// second SIGINT, which many programs take as "quit now, skip the cleanup".
// A SIGINT sent to exec alone while it holds the terminal's foreground
// (kill -INT) is then not forwarded: rare, and SIGTERM always is.
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
