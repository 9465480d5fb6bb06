// Package pidwatch holds a pidfd for every watched process and reports each
// death the moment the kernel signals it, with the exit status where the
// kernel keeps it (PIDFD_INFO_EXIT, Linux ≥ 6.15). Watch opens the pidfd
// before the caller's identity check, so a pid reused later is never taken
// for the watched process.
package pidwatch

import (
	"errors"
	"fmt"
	"syscall"
	"time"
)

// Errors Watch returns, checked with errors.Is.
var (
	// ErrUnsupported means no pidfds or epoll here; the caller polls instead.
	ErrUnsupported = errors.New("pidfd watching not supported")
	// ErrNotSame means the pid now belongs to another process; nothing is
	// watched.
	ErrNotSame = errors.New("pid belongs to another process")
	// ErrGone means no process has that pid any more; nothing is watched.
	ErrGone = errors.New("process already gone")
	// ErrNoFD means the process is out of file descriptors; the caller polls.
	ErrNoFD = errors.New("no file descriptor left for a pidfd")
	// ErrBudget means the Watcher holds its cap of pidfds (SetMax), which
	// keeps fds free for the store and the listener. It wraps ErrNoFD.
	ErrBudget = fmt.Errorf("pidfd budget reached: %w", ErrNoFD)
	// ErrClosed means the Watcher was closed; nothing is watched.
	ErrClosed = errors.New("pid watcher closed")
)

// Exit is how a process ended, as far as the kernel said.
type Exit struct {
	// Known is false when the kernel did not say (no PIDFD_INFO_EXIT, or the
	// parent did not reap in time).
	Known bool
	// Code is the exit code when Signal is 0.
	Code int
	// Signal is the signal that killed the process, 0 when it exited.
	Signal syscall.Signal
}

// Death is one watched process's end. A key may see two: one at the exit
// (Exit possibly unknown: the kernel keeps it only once reaped), then,
// if that was unknown, one with Exit.Known within ExitWait. A Death
// dropped at a full queue never comes; Resync says so.
type Death struct {
	Key  string
	PID  int
	At   time.Time
	Exit Exit
}

// ExitWait is how long a dead process's pidfd is kept for its exit status.
const ExitWait = 2 * time.Second

// QueueMax bounds the deaths waiting for the reader: one resync serves a
// reader that far behind better than an unbounded queue (ADR-0039).
const QueueMax = 4096
