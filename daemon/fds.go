package daemon

import (
	"errors"
	"fmt"
	"math"
	"os"

	"go.uber.org/zap"
	"golang.org/x/sys/unix"
)

// The file descriptor budget (ADR-0037). The daemon shares RLIMIT_NOFILE
// three ways, so that watching many processes can never take the fds the
// store, the listener and the probes need:
//
//   - fdReserveOwn for its own files: stdio (3), the Go runtime's netpoller
//     (2), the listener, the lock file, the sd_notify socket, the pid
//     watcher's epoll and eventfd (2), the store (SQLite: 4 pooled
//     connections, sqlite.MaxConns, each holding the database and its
//     WAL, and the shared -shm: 9; a PostgreSQL pool: one socket a
//     connection), a pusher's
//     connection per Alertmanager, and the transient ones: a probe's /proc
//     read or an artifact walk (the monitor's, the sweep's and each
//     request's: a few each), the metrics scrape's /proc/self reads;
//   - the HTTP connections the listener may hold at once (http.max_connections
//     plus the probes' reserve, connReserve: 1,040 by default), or half of
//     what the own reserve leaves when the limit is small, and then the
//     listener's cap shrinks to fit (httpMax);
//   - the rest for pidfds: the pid watcher's cap (pidwatch SetMax).
//     Processes beyond it are polled (monitor.Settings.PollInterval).
const (
	fdReserveOwn = 64
	// fdHeadroom is how many fds must be free for the store to count as
	// able to open its files (a new SQLite connection takes two, the
	// request that needs it one or two more): fewer, and /readyz says
	// not ready.
	fdHeadroom = 8
)

// fdBudget is how the daemon shares its file descriptor limit.
type fdBudget struct {
	// Limit is RLIMIT_NOFILE's soft limit as the daemon runs with it.
	Limit int
	// Own and Conns are reserved: the daemon's own files, its HTTP
	// connections.
	Own, Conns int
	// Pidfds is the rest: the pid watcher's cap.
	Pidfds int
}

// budgetFor shares limit: the own reserve first, then the connections'
// (conns, the listener's most open connections, at most half of what is
// left, so that a small limit still watches some processes by pidfd),
// then the pidfds.
func budgetFor(limit uint64, conns int) fdBudget {
	l := int(min(limit, math.MaxInt32))
	b := fdBudget{Limit: l, Own: min(fdReserveOwn, l)}
	rest := l - b.Own
	b.Conns = max(min(conns, rest/2), 0)
	b.Pidfds = rest - b.Conns
	return b
}

// fdBudgetOf shares the fd limit once, at the start: the daemon's own
// files, the listener's connections (maxConns, and the probes' reserve),
// the watcher's pidfds (ADR-0037). No budget, said in the log, when the
// limit cannot be read.
func fdBudgetOf(maxConns int, log *zap.Logger) fdBudget {
	limit, err := nofile()
	if err != nil {
		log.Warn("cannot read the fd limit: pidfds and connections are not capped by it", zap.Error(err))
		return fdBudget{}
	}
	return budgetFor(limit, maxConns+connReserve)
}

// nofile is RLIMIT_NOFILE's soft limit, the one open(2) obeys. Go raises
// it to the hard limit when the process starts (on Linux, since Go 1.19),
// so it reads the hard limit, unless the raise was refused (the unit's
// SystemCallFilter=~@resources makes setrlimit fail): then it is the soft
// limit the daemon was started with. The unit sets both to the same
// value, so it reads that either way.
func nofile() (uint64, error) {
	var rl unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_NOFILE, &rl); err != nil {
		return 0, fmt.Errorf("getrlimit RLIMIT_NOFILE: %w", err)
	}
	return rl.Cur, nil
}

// checkHeadroom says whether n file descriptors can be had now: it opens
// /dev/null and duplicates it to n descriptors, then closes them all
// (a few µs, once a second from the store watch). An error names the
// limit and says what to do. Exhaustion is not the watcher's doing (its
// cap leaves the reserve free): something else holds them, or the limit
// is too small for the reserve.
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

// httpMax is the listener's connection cap (http.max_connections,
// conns) within the budget's share b (the listener opens at most its cap plus
// connReserve): conns itself when it fits, else what the share leaves, at
// least 1. A zero budget (the limit unknown) leaves conns as it is.
func httpMax(conns int, b fdBudget) int {
	if b.Limit == 0 || b.Conns >= conns+connReserve {
		return conns
	}
	return max(b.Conns-connReserve, 1)
}
