package store

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"
	"watchdog/unixtime"

	"golang.org/x/sys/unix"
	"modernc.org/sqlite"
)

// ErrUnavailable: the store cannot take writes now. Either its identity is
// lost (the database file, its WAL or its shared-memory index was deleted
// or replaced while this process had it open: every later write would go
// into a file nobody will ever open again, so none is made or
// acknowledged, until a restart), or the file system refuses writes
// (read-only, full, I/O errors), which may clear by itself. The HTTP API
// answers it with 503.
var ErrUnavailable = errors.New("store unavailable")

// minFreeBytes is the free space below which the store reports the disk
// full. A one-row probe write can succeed on a full disk (SQLite reuses the
// WAL's space after a checkpoint) while the next registration, which needs
// new pages, fails: the free space is the earlier and truer signal.
// 1 MiB is 256 pages, a few hundred transitions.
const minFreeBytes = 1 << 20

// fileID is a file's identity: device and inode. A path that names another
// (dev, ino) than at open is another file.
type fileID struct{ dev, ino uint64 }

func (f fileID) String() string { return fmt.Sprintf("inode %d on device %d", f.ino, f.dev) }

// statID is the identity of the file at path. It uses stat(2), never
// open(2): closing any descriptor of the database file in this process
// would drop SQLite's POSIX locks on it.
func statID(path string) (fileID, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return fileID{}, err
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return fileID{}, fmt.Errorf("stat %s: no device and inode on this platform", path)
	}
	return fileID{dev: uint64(st.Dev), ino: st.Ino}, nil
}

// identity is what Open saw: the database file and, in WAL mode, its -wal
// and -shm companions. A companion deleted under a live store is as bad as
// the database itself: the next process to open the database creates a
// fresh one beside this process's, and the two no longer see each other's
// writes.
type identity struct {
	files []watchedFile
}

type watchedFile struct {
	path string
	id   fileID
}

// check compares each watched path with what Open saw. A missing or
// different file is returned as lost (permanent); any other stat failure
// (EIO, EACCES on the directory) as a plain error the next check may
// clear.
func (ident *identity) check() (lost string, err error) {
	for _, f := range ident.files {
		got, err := statID(f.path)
		switch {
		case errors.Is(err, os.ErrNotExist):
			return fmt.Sprintf("%s was deleted while watchdog had it open (it was %s)", f.path, f.id), nil
		case err != nil:
			return "", fmt.Errorf("check store file: %w", err)
		case got != f.id:
			return fmt.Sprintf("%s was replaced while watchdog had it open (%s, was %s)", f.path, got, f.id), nil
		}
	}
	return "", nil
}

// health is the store's own memory of what went wrong for good.
type health struct {
	ident *identity // nil: not a file (or not watched)

	mu      sync.Mutex
	lost    error // latched by the first failed identity check
	corrupt error // latched by the first SQLITE_CORRUPT/NOTADB of a write
}

// FilePath is the file system path of a store path or file: URI; "" for an
// in-memory database.
func FilePath(path string) string {
	p, ok := strings.CutPrefix(path, "file:")
	if !ok {
		if path == ":memory:" {
			return ""
		}
		return path
	}
	p, query, _ := strings.Cut(p, "?")
	if strings.Contains(query, "mode=memory") || p == ":memory:" || p == "" {
		return ""
	}
	if rest, ok := strings.CutPrefix(p, "//"); ok {
		// file://host/path: only an empty or localhost authority is local.
		rest = strings.TrimPrefix(rest, "localhost")
		p = rest
	}
	return p
}

// watchIdentity pins one connection, so that SQLite never deletes and
// recreates the WAL and -shm files while this store is open (it does when
// the last connection to a database closes), and records the identity of
// the database file and its companions.
func (s *SQLite) watchIdentity(ctx context.Context) error {
	file := FilePath(s.path)
	if file == "" {
		return nil
	}
	conn, err := s.db.Conn(ctx)
	if err != nil {
		return fmt.Errorf("pin a connection: %w", err)
	}
	// A read opens the WAL and maps the -shm index on this connection.
	var n int
	if err := conn.QueryRowContext(ctx, "SELECT COUNT(*) FROM schema_migrations").Scan(&n); err != nil {
		conn.Close()
		return fmt.Errorf("pin a connection: %w", err)
	}
	s.pin = conn
	ident := &identity{}
	for _, p := range []string{file, file + "-wal", file + "-shm"} {
		id, err := statID(p)
		if errors.Is(err, os.ErrNotExist) && p != file {
			continue // not in WAL mode: nothing to watch
		}
		if err != nil {
			return fmt.Errorf("record store identity: %w", err)
		}
		ident.files = append(ident.files, watchedFile{path: p, id: id})
	}
	s.health.ident = ident
	return nil
}

// Fault reports what makes the store unusable for good, until a restart:
// its identity lost (wrapping ErrUnavailable) or corruption seen by a
// write. nil means none was seen; it does not probe (see Probe).
func (s *SQLite) Fault() error {
	s.health.mu.Lock()
	defer s.health.mu.Unlock()
	if s.health.lost != nil {
		return s.health.lost
	}
	return s.health.corrupt
}

// Lost reports whether the store's identity was lost (the database file
// or a companion deleted or replaced), after which it refuses every write.
func (s *SQLite) Lost() bool {
	s.health.mu.Lock()
	defer s.health.mu.Unlock()
	return s.health.lost != nil
}

// usable checks the store's identity: the latch, then three stat(2)
// calls, about 5µs. writeTx checks before a transaction, so that none is
// made into a file known lost, and after it, so that none is acknowledged
// whose file went while it ran (that write is refused, though a rescued
// copy may hold it: its outcome is unknown to the client, as with any
// failed request).
func (s *SQLite) usable() error {
	h := &s.health
	if h.ident == nil {
		return nil
	}
	h.mu.Lock()
	lost := h.lost
	h.mu.Unlock()
	if lost != nil {
		return lost
	}
	what, err := h.ident.check()
	if err != nil {
		return fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	if what == "" {
		return nil
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.lost == nil {
		h.lost = fmt.Errorf("%w: the database file %s", ErrUnavailable, what)
	}
	return h.lost
}

// SQLite result codes the write path sorts by (primary codes).
const (
	codeReadOnly = 8
	codeIOErr    = 10
	codeCorrupt  = 11
	codeFull     = 13
	codeCantOpen = 14
	codeNotADB   = 26
)

// classifyWriteErr turns what a write transaction failed with into the
// store's vocabulary: a file system that refuses writes is ErrUnavailable
// (the API's 503: retry later), corruption is latched for Fault.
func (s *SQLite) classifyWriteErr(err error) error {
	var se *sqlite.Error
	if err == nil || errors.Is(err, ErrUnavailable) || !errors.As(err, &se) {
		return err
	}
	switch se.Code() & 0xff {
	case codeReadOnly, codeIOErr, codeFull, codeCantOpen:
		return fmt.Errorf("%w: %w", ErrUnavailable, err)
	case codeCorrupt, codeNotADB:
		s.health.mu.Lock()
		if s.health.corrupt == nil {
			s.health.corrupt = fmt.Errorf("database corruption seen by a write (stop watchdog: its start-up check, PRAGMA quick_check, says how to recover): %w", err)
		}
		s.health.mu.Unlock()
	}
	return err
}

// Probe proves that the store can take a write now, within ctx: its
// identity holds, the corruption latch is clear, its file system has room,
// and a one-row write to health_probe commits. It returns nil or the
// reason, wrapping ErrUnavailable where writes would fail.
func (s *SQLite) Probe(ctx context.Context) error {
	if err := s.usable(); err != nil {
		return err
	}
	if err := s.Fault(); err != nil {
		return err
	}
	if file := FilePath(s.path); file != "" {
		if err := checkFree(filepath.Dir(file)); err != nil {
			return err
		}
	}
	err := s.writeTx(ctx, func() error {
		_, err := s.exec(ctx, "UPDATE health_probe SET at = ? WHERE id = 1", unixtime.Seconds(time.Now()))
		return err
	})
	if err != nil {
		return fmt.Errorf("write probe: %w", err)
	}
	return nil
}

// checkFree reports a file system with less than minFreeBytes available
// to this process (root may use the blocks reserved for it).
func checkFree(dir string) error {
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		return fmt.Errorf("%w: statfs %s: %w", ErrUnavailable, dir, err)
	}
	avail := st.Bavail
	if os.Geteuid() == 0 {
		avail = st.Bfree
	}
	if free := avail * uint64(st.Bsize); free < minFreeBytes {
		return fmt.Errorf("%w: the disk holding %s is full (%d bytes free, at least %d needed): free some space; watchdog recovers by itself", ErrUnavailable, dir, free, minFreeBytes)
	}
	return nil
}

// QuickCheck runs PRAGMA quick_check over the whole database (every page
// read, every index checked against its table, without the slower
// index-content comparison of integrity_check) and returns an error
// naming the first problems and how to recover. The daemon refuses to
// start on it: a damaged page answers some queries and fails others,
// which no readiness probe can see.
func (s *SQLite) QuickCheck(ctx context.Context) error {
	rows, err := s.db.QueryContext(ctx, "PRAGMA quick_check(5)")
	if err != nil {
		return s.quickCheckFailed(err.Error())
	}
	defer rows.Close()
	var problems []string
	for rows.Next() {
		var line string
		if err := rows.Scan(&line); err != nil {
			return s.quickCheckFailed(err.Error())
		}
		if line != "ok" {
			problems = append(problems, line)
		}
	}
	if err := rows.Err(); err != nil {
		return s.quickCheckFailed(err.Error())
	}
	if len(problems) > 0 {
		return s.quickCheckFailed(strings.Join(problems, "; "))
	}
	return nil
}

func (s *SQLite) quickCheckFailed(what string) error {
	db := FilePath(s.path)
	return fmt.Errorf("store %s is damaged (PRAGMA quick_check: %s): refusing to start on it. Recover with the watchdog stopped: "+
		"`sqlite3 %s .recover | sqlite3 %s.recovered && mv %s %s.damaged && mv %s.recovered %s` (then start watchdog), or restore the latest backup",
		db, strings.ReplaceAll(what, "\n", " "), db, db, db, db, db, db)
}

// Rescue copies the database as this process still sees it, through its
// pinned connection, into a new file beside the lost one (VACUUM INTO
// reads the deleted or replaced file through the descriptors still open),
// and returns the copy's path. It is how a store lost to an `rm` keeps its
// data: the copy is a consistent snapshot, WAL included.
func (s *SQLite) Rescue(ctx context.Context, now time.Time) (string, error) {
	file := FilePath(s.path)
	if file == "" || s.pin == nil {
		return "", errors.New("rescue: not a file-backed store")
	}
	dst := fmt.Sprintf("%s.rescued-%s", file, now.UTC().Format("20060102T150405Z"))
	s.pinMu.Lock()
	defer s.pinMu.Unlock()
	if _, err := s.pin.ExecContext(ctx, "VACUUM INTO ?", dst); err != nil {
		return "", fmt.Errorf("rescue into %s: %w", dst, err)
	}
	return dst, nil
}
