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

// DaemonLock is the one-daemon-per-database lock: an exclusive flock(2) on
// "<database>.lock" holding the owner's pid. A file of its own, since closing
// any descriptor drops SQLite's POSIX locks; never removed, so two cannot lock.
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

// LockDaemonHost is LockDaemon for one host of a fleet (docs/fleet.md):
// hostID "" takes the plain lock, others "<database>.lock.<host>".
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

// DaemonLockHeld reports whether a daemon of any host holds a lock of the
// database at path, from /proc/locks without trying it (a try would refuse a
// starting daemon). known is false when it cannot tell.
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

// flockHeld says whether /proc/locks' text holds a granted flock on l (a
// "->" line is a waiter). On overlayfs the device differs, so inode and pid
// must both match.
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
// one database file, by host id: a held lock is a live daemon.
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

// ReadDaemonLocks reads which daemon locks of the database at path are held;
// an error when it cannot tell.
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

// DaemonPID is the pid of hostID's daemon serving path, from its held lock
// file; 0 when none or unreadable (docs/security.md).
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
