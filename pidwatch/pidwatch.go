// Package pidwatch holds a pidfd for every watched process and reports each
// death the moment the kernel signals it, with the exit status where the
// kernel keeps it (PIDFD_INFO_EXIT, Linux ≥ 6.15).
//
// A watch is only as good as its identity check: Watch opens the pidfd
// first and then asks the caller whether the process behind the pid is
// still the one it recorded (start time, boot id). Once that answer is yes,
// the fd refers to that very process, so a pid reused later can never be
// taken for it.
package pidwatch

import (
	"errors"
	"fmt"
	"syscall"
	"time"
)

// Errors Watch returns, checked with errors.Is.
var (
	// ErrUnsupported: this system has no pidfds or epoll (another OS, a
	// kernel older than 5.3); the caller polls instead.
	ErrUnsupported = errors.New("pidfd watching not supported")
	// ErrNotSame: the pid now belongs to another process (the identity
	// check said no after the pidfd was opened); nothing is watched.
	ErrNotSame = errors.New("pid belongs to another process")
	// ErrGone: no process has that pid any more; nothing is watched.
	ErrGone = errors.New("process already gone")
	// ErrNoFD: the process is out of file descriptors (EMFILE/ENFILE);
	// the caller polls this one instead.
	ErrNoFD = errors.New("no file descriptor left for a pidfd")
	// ErrBudget: the Watcher already holds as many pidfds as its cap
	// (SetMax) allows, so that the rest of the process's file descriptors
	// stay free for the store, the listener and its own files. It wraps
	// ErrNoFD: a caller that polls on ErrNoFD polls on it too.
	ErrBudget = fmt.Errorf("pidfd budget reached: %w", ErrNoFD)
	// ErrClosed: the Watcher was closed; nothing is watched.
	ErrClosed = errors.New("pid watcher closed")
)

// Exit is how a process ended, as far as the kernel said.
type Exit struct {
	// Known is false when the kernel did not say (no PIDFD_INFO_EXIT, or
	// the process was never reaped by its parent in time).
	Known bool
	// Code is the exit code when Signal is 0.
	Code int
	// Signal is the signal that killed the process, 0 when it exited.
	Signal syscall.Signal
}

// Death is one watched process's end. A key may see two: the first as soon
// as the process exits (Exit possibly unknown, because the kernel keeps the
// status only once the parent has reaped it), and, when that one's Exit was
// unknown, a second with Exit.Known once the kernel has it (within
// ExitWait). The watch is over after the last one. A Death dropped at a
// full queue (QueueMax) never comes; Resync says so.
type Death struct {
	Key  string
	PID  int
	At   time.Time
	Exit Exit
}

// ExitWait is how long a dead process's pidfd is kept for its exit status
// to appear before the watch gives up on it.
const ExitWait = 2 * time.Second

// QueueMax bounds the deaths waiting for the reader. Without a bound the
// queue grows with the watches (up to two deaths each) for as long as the
// reader is behind: with the daemon's default pidfd cap (about 64,000)
// that is over 100,000 deaths held. 4,096 is seconds of the monitor's
// work (one probe and one store write per death) and about half a MiB;
// a reader that far behind is better served by one resync (a check of
// every watched process, which finds the dropped deaths as well) than by
// a queue that holds the whole burst.
const QueueMax = 4096
