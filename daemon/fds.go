package daemon

import (
	"errors"
	"fmt"
	"math"
	"os"

	"go.uber.org/zap"
	"golang.org/x/sys/unix"
)

// The file descriptor budget (ADR-0037): RLIMIT_NOFILE is shared between
// the daemon's own files (fdReserveOwn: stdio, netpoller, listener, store,
// pushers, transient /proc reads), the HTTP connections, and the rest for
// pidfds, so watching many processes never takes the fds the store, the
// listener and the probes need. Processes beyond the pidfd cap are polled.
const (
	fdReserveOwn = 64
	// fdHeadroom is how many fds the store needs free to open its files, else not ready.
	fdHeadroom = 8
)

// fdBudget is how the daemon shares its file descriptor limit.
type fdBudget struct {
	// Limit is RLIMIT_NOFILE's soft limit as the daemon runs with it.
	Limit int
	// Own and Conns are reserved: the daemon's own files, its HTTP connections.
	Own, Conns int
	// Pidfds is the rest: the pid watcher's cap.
	Pidfds int
}

// budgetFor shares limit: the own reserve, then the connections (at most
// half of what is left, so a small limit still gets some pidfds), then the
// pidfds.
func budgetFor(limit uint64, conns int) fdBudget {
	l := int(min(limit, math.MaxInt32))
	b := fdBudget{Limit: l, Own: min(fdReserveOwn, l)}
	rest := l - b.Own
	b.Conns = max(min(conns, rest/2), 0)
	b.Pidfds = rest - b.Conns
	return b
}

// fdBudgetOf shares the fd limit once, at start; no budget (logged) when
// the limit cannot be read.
func fdBudgetOf(maxConns int, log *zap.Logger) fdBudget {
	limit, err := nofile()
	if err != nil {
		log.Warn("cannot read the fd limit: pidfds and connections are not capped by it", zap.Error(err))
		return fdBudget{}
	}
	return budgetFor(limit, maxConns+connReserve)
}

// nofile is RLIMIT_NOFILE's soft limit, the one open(2) obeys (Go raises it
// to the hard limit at start unless setrlimit is filtered).
func nofile() (uint64, error) {
	var rl unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_NOFILE, &rl); err != nil {
		return 0, fmt.Errorf("getrlimit RLIMIT_NOFILE: %w", err)
	}
	return rl.Cur, nil
}

// checkHeadroom says whether n file descriptors can be had now, by
// duplicating /dev/null n times; the error names the limit and what to do.
func checkHeadroom(n int) error {
	fds := make([]int, 0, n)
	defer func() {
		for _, fd := range fds {
			_ = unix.Close(fd)
		}
	}()
	fd, err := unix.Open(os.DevNull, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	for err == nil {
		fds = append(fds, fd)
		if len(fds) == n {
			return nil
		}
		fd, err = unix.FcntlInt(uintptr(fds[0]), unix.F_DUPFD_CLOEXEC, 0)
	}
	if !errors.Is(err, unix.EMFILE) && !errors.Is(err, unix.ENFILE) {
		return nil // not a shortage of descriptors: not this check's business
	}
	limit, _ := nofile()
	return fmt.Errorf("out of file descriptors: fewer than %d of the limit of %d are free (%v), so the store cannot open its files; "+
		"see what holds them (ls -l /proc/%d/fd), or raise LimitNOFILE", n, limit, err, os.Getpid())
}

// httpMax is the listener's connection cap within the budget: conns when
// it fits with connReserve, else what the share leaves (at least 1).
func httpMax(conns int, b fdBudget) int {
	if b.Limit == 0 || b.Conns >= conns+connReserve {
		return conns
	}
	return max(b.Conns-connReserve, 1)
}
