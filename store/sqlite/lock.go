package sqlite

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"watchdog/store"

	"golang.org/x/sys/unix"
)

// DaemonLock is the one-daemon-per-database lock: an exclusive flock(2)
// on "<database>.lock" beside the database, holding the owner's pid.
//
// It is a file of its own because SQLite takes POSIX record locks on the
// database file, and those vanish when any descriptor of that file in the
// process closes; flock on another file cannot disturb them. Only the
// daemon takes it: CLI processes share the database with a running daemon
// through SQLite's own locking. The kernel drops the lock when the process
// dies, so a crashed daemon never blocks its successor; the file itself is
// left in place (removing it would let a third process lock a new file
// while a second still holds the old one).
type DaemonLock struct {
	f *os.File
}

// LockSuffix names the lock file: the database path plus this.
const LockSuffix = ".lock"

// LockDaemon takes the daemon lock of the database at path (a path or a
// file: URI). It returns (nil, nil) for an in-memory database, and an
// error naming the other daemon's pid when one holds the lock.
func LockDaemon(path string) (*DaemonLock, error) {
	return LockDaemonHost(path, "")
}

// LockDaemonHost is LockDaemon for one host of a fleet sharing the
// database: one daemon per database and host, so that daemons of other
// host ids (docs/fleet.md) share the file while a second daemon of the
// same host is refused. hostID "" is the plain lock (LockSuffix); any
// other takes "<database>.lock.<host>" (a host id that is not a safe file
// name is hashed).
func LockDaemonHost(path, hostID string) (*DaemonLock, error) {
	file := FilePath(path)
	if file == "" {
		return nil, nil
	}
	name := file + LockSuffix
	if hostID != "" {
		name += "." + lockName(hostID)
	}
	// Never through a symlink: a root daemon truncates what it opens here,
	// so a link planted at the lock's name would aim that at any file.
	f, err := os.OpenFile(name, os.O_RDWR|os.O_CREATE|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
	if err != nil {
		if errors.Is(err, unix.ELOOP) {
			return nil, fmt.Errorf("lock store %s: %s is a symlink; remove it (the daemon makes the lock file itself)", file, name)
		}
		return nil, fmt.Errorf("lock store %s: %w", file, err)
	}
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		f.Close()
		return nil, fmt.Errorf("lock store %s: %s is not a regular file; remove it (the daemon makes the lock file itself)", file, name)
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		owner := "another process"
		if b, rerr := io.ReadAll(io.LimitReader(f, 32)); rerr == nil {
			if pid, perr := strconv.Atoi(strings.TrimSpace(string(b))); perr == nil && pid > 0 {
				owner = "pid " + strconv.Itoa(pid)
			}
		}
		f.Close()
		if errors.Is(err, unix.EWOULDBLOCK) {
			return nil, fmt.Errorf("another watchdog daemon (%s) is already serving %s (it holds %s): stop it first, or give this one another store.dsn", owner, file, name)
		}
		return nil, fmt.Errorf("lock store %s: flock %s: %w", file, name, err)
	}
	// The pid is for the next daemon's message only; the lock is the flock.
	if err := f.Truncate(0); err == nil {
		_, _ = f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	}
	return &DaemonLock{f: f}, nil
}

// lockName is hostID when it is a safe file name, else a hash of it.
func lockName(hostID string) string {
	safe := len(hostID) <= 64
	for _, c := range hostID {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.') {
			safe = false
			break
		}
	}
	if safe && hostID != "." && hostID != ".." {
		return hostID
	}
	sum := sha256.Sum256([]byte(hostID))
	return hex.EncodeToString(sum[:12])
}

// Release drops the lock. A nil lock is fine.
func (l *DaemonLock) Release() error {
	if l == nil || l.f == nil {
		return nil
	}
	err := l.f.Close() // closing the only descriptor releases the flock
	l.f = nil
	return err
}

// DaemonLockHeld reports whether a daemon holds a lock of the database at
// path, of any host (the plain lock and every "<database>.lock.<host>"),
// without taking one itself: a reader that tried the lock would make a
// daemon starting at that instant refuse to start. It reads the kernel's
// table of locks (/proc/locks), where a lock vanishes the moment its
// daemon dies, however it died.
//
// known is false when it cannot tell: there is no file (an in-memory
// database, a PostgreSQL URL), or the table is unreadable. A database
// beside which no lock file exists is known to be served by no daemon.
func DaemonLockHeld(path string) (held, known bool) {
	if store.IsPostgresDSN(path) {
		return false, false
	}
	file := FilePath(path)
	if file == "" {
		return false, false
	}
	locks, err := lockFiles(file)
	if err != nil {
		return false, false
	}
	if len(locks) == 0 {
		return false, true
	}
	table, err := os.ReadFile("/proc/locks")
	if err != nil {
		return false, false
	}
	for _, l := range locks {
		if flockHeld(table, l) {
			return true, true
		}
	}
	return false, true
}

// lockFile is one daemon lock file beside a database, as the kernel's
// table names it.
type lockFile struct {
	name  string // the file's name in its directory
	dev   uint64
	ino   uint64
	owner string // the pid the daemon wrote into it
}

// lockFiles lists the daemon lock files of the database file.
func lockFiles(file string) ([]lockFile, error) {
	dir, base := filepath.Split(file)
	if dir == "" {
		dir = "."
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("list the lock files of %s: %w", file, err)
	}
	var out []lockFile
	for _, e := range entries {
		name := e.Name()
		if name != base+LockSuffix && !strings.HasPrefix(name, base+LockSuffix+".") {
			continue
		}
		var st unix.Stat_t
		if err := unix.Lstat(filepath.Join(dir, name), &st); err != nil || st.Mode&unix.S_IFMT != unix.S_IFREG {
			continue // gone since, or not a lock the daemon made
		}
		l := lockFile{name: name, dev: uint64(st.Dev), ino: st.Ino}
		if b, err := os.ReadFile(filepath.Join(dir, name)); err == nil && len(b) <= 32 {
			l.owner = strings.TrimSpace(string(b))
		}
		out = append(out, l)
	}
	return out, nil
}

// flockHeld says whether the kernel's lock table (the text of
// /proc/locks) holds a granted flock on l. A line reads
// "1: FLOCK  ADVISORY  WRITE 4242 fe:00:9982412 0 EOF"; one with "->" is
// a waiter, not a holder. The device is compared when it matches; on a
// stacked file system (overlayfs) the table names the underlying device,
// so there the inode and the pid the daemon wrote into the file must
// both match.
func flockHeld(table []byte, l lockFile) bool {
	for line := range strings.SplitSeq(string(table), "\n") {
		f := strings.Fields(line)
		if len(f) < 6 || f[1] != "FLOCK" {
			continue
		}
		parts := strings.Split(f[5], ":")
		if len(parts) != 3 {
			continue
		}
		ino, err := strconv.ParseUint(parts[2], 10, 64)
		if err != nil || ino != l.ino {
			continue
		}
		maj, err1 := strconv.ParseUint(parts[0], 16, 32)
		mnr, err2 := strconv.ParseUint(parts[1], 16, 32)
		if err1 == nil && err2 == nil && uint32(maj) == unix.Major(l.dev) && uint32(mnr) == unix.Minor(l.dev) {
			return true
		}
		if l.owner != "" && f[4] == l.owner {
			return true
		}
	}
	return false
}

// DaemonLocks is what the kernel's lock table says of the daemons serving
// one database file, one per host id: which of their locks are held now.
// On SQLite every daemon sharing the file runs on this machine (the file
// is local), so a held lock is a live daemon, known without a write.
type DaemonLocks struct {
	held map[string]bool // by lock file suffix: "" the plain lock, else lockName(host)
}

// Holds says whether the daemon of hostID holds its lock.
func (l DaemonLocks) Holds(hostID string) bool { return l.held[lockKey(hostID)] }

// Others says whether a daemon of another host id than hostID holds a
// lock of the file.
func (l DaemonLocks) Others(hostID string) bool {
	self := lockKey(hostID)
	for k := range l.held {
		if k != self {
			return true
		}
	}
	return false
}

// lockKey is the suffix of hostID's lock file after LockSuffix.
func lockKey(hostID string) string {
	if hostID == "" {
		return ""
	}
	return lockName(hostID)
}

// ReadDaemonLocks reads which daemon locks of the database at path are
// held (a directory listing and /proc/locks, no write and no disk access
// beyond the directory). An error when it cannot tell: not a file, or the
// table is unreadable.
func ReadDaemonLocks(path string) (DaemonLocks, error) {
	file := FilePath(path)
	if file == "" || store.IsPostgresDSN(path) {
		return DaemonLocks{}, errors.New("daemon locks: not a database file")
	}
	locks, err := lockFiles(file)
	if err != nil {
		return DaemonLocks{}, err
	}
	out := DaemonLocks{held: map[string]bool{}}
	if len(locks) == 0 {
		return out, nil
	}
	table, err := os.ReadFile("/proc/locks")
	if err != nil {
		return DaemonLocks{}, fmt.Errorf("daemon locks: %w", err)
	}
	base := filepath.Base(file) + LockSuffix
	for _, l := range locks {
		if flockHeld(table, l) {
			out.held[strings.TrimPrefix(strings.TrimPrefix(l.name, base), ".")] = true
		}
	}
	return out, nil
}

// HostLocks reads which daemon locks of this store's file are held
// (ReadDaemonLocks): how a daemon sees, without a write, who else serves it.
func (s *Store) HostLocks() (store.HostLocks, error) {
	l, err := ReadDaemonLocks(s.path)
	if err != nil {
		return nil, err
	}
	return l, nil
}

// DaemonPID is the pid of the daemon of hostID serving the database at
// path, as its lock file says while the lock is held; 0 when none holds
// it, or when this process may not read the file (the daemon's, 0600).
// The CLI on the store refuses that pid as an entity's, as the daemon
// does (docs/security.md).
func DaemonPID(path, hostID string) int {
	file := FilePath(path)
	if file == "" || store.IsPostgresDSN(path) {
		return 0
	}
	locks, err := ReadDaemonLocks(path)
	if err != nil {
		return 0
	}
	for _, h := range []string{hostID, ""} {
		if !locks.Holds(h) {
			continue
		}
		name := file + LockSuffix
		if h != "" {
			name += "." + lockName(h)
		}
		b, err := os.ReadFile(name)
		if err != nil {
			continue
		}
		if pid, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil && pid > 0 {
			return pid
		}
	}
	return 0
}
