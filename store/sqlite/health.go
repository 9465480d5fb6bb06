package sqlite

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
	sqlite3 "modernc.org/sqlite"

	"watchdog/internal/unixtime"
	"watchdog/store"
)

// minFreeBytes is the free space below which the store reports the disk
// full and refuses writes (see checkSpace, and reserveMargin for when it
// takes them again). A one-row probe write can succeed on a full disk (SQLite reuses the
// WAL's space after a checkpoint) while the next registration, which needs
// new pages, fails: the free space is the earlier and truer signal.
// 1 MiB is 256 pages, a few hundred transitions.
const minFreeBytes = 1 << 20

// writeHeadroom is what one write may take of the disk beyond what is free:
// its checkpoint (walCheckpointPages) and its own frames. Checked before every
// write so writes stop short of the reserve (issue 37).
const writeHeadroom = walCheckpointPages*4096 + 256<<10

// shortBelow is the free space below which a write is refused: the
// reserve and one write's headroom (2.25 MiB).
const shortBelow = minFreeBytes + writeHeadroom

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
	// short: the disk went below its reserve (checkSpace); writes are
	// refused until shortBelow+reserveMargin are free.
	short bool
	// free measures a directory's free space; nil is freeBytes (tests
	// set their own).
	free func(dir string) (uint64, error)
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
func (s *Store) watchIdentity(ctx context.Context) error {
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
// its identity lost (wrapping store.ErrUnavailable) or corruption seen by a
// write. nil means none was seen; it does not write (see CheckWrite).
func (s *Store) Fault() error {
	s.health.mu.Lock()
	defer s.health.mu.Unlock()
	if s.health.lost != nil {
		return s.health.lost
	}
	return s.health.corrupt
}

// Lost reports whether the store's identity was lost (the database file
// or a companion deleted or replaced), after which it refuses every write.
func (s *Store) Lost() bool {
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
func (s *Store) usable() error {
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
		return fmt.Errorf("%w: %w", store.ErrUnavailable, err)
	}
	if what == "" {
		return nil
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.lost == nil {
		h.lost = fmt.Errorf("%w: the database file %s", store.ErrUnavailable, what)
	}
	return h.lost
}

// writePhase is where a write transaction failed: before its commit,
// when nothing of it was written, or at the commit, whose result an I/O
// error leaves unknown.
type writePhase int

const (
	beforeCommit writePhase = iota
	atCommit
)

// classifyWriteErr turns what a write transaction failed with into the
// store's vocabulary (see store.Classify): a file system that refuses writes is
// store.ErrUnavailable (the API's 503: nothing written, retry later), an I/O
// error at the commit store.ErrOutcomeUnknown (the API's 504: re-read first),
// corruption is latched for Fault. A full disk also puts the store on its
// reserve (see checkSpace), so that nothing else writes until the space
// is back.
func (s *Store) classifyWriteErr(err error, phase writePhase) error {
	var se *sqlite3.Error
	if err == nil || errors.Is(err, store.ErrUnavailable) || errors.Is(err, store.ErrOutcomeUnknown) || !errors.As(err, &se) {
		return err
	}
	switch code := se.Code(); {
	case phase == atCommit && commitMayHaveLanded(err):
		return fmt.Errorf("%w: the commit failed with an I/O error and may be on disk: %w", store.ErrOutcomeUnknown, err)
	case unavailableCode(code):
		if code&0xff == codeFull {
			s.health.mu.Lock()
			s.health.short = true
			s.health.mu.Unlock()
		}
		return fmt.Errorf("%w: %w", store.ErrUnavailable, err)
	case code&0xff == codeCorrupt, code&0xff == codeNotADB:
		s.health.mu.Lock()
		if s.health.corrupt == nil {
			s.health.corrupt = fmt.Errorf("database corruption seen by a write (stop watchdog: its start-up check, PRAGMA quick_check, says how to recover): %w", err)
		}
		s.health.mu.Unlock()
	}
	return err
}

// lostDuring is the error of a write whose transaction ran while the
// store's identity was lost (usable failed after it): the commit went into
// the lost file, which the daemon's rescue copies, so whether the write
// "is in the store" depends on which file the operator keeps.
func lostDuring(lost error) error {
	return fmt.Errorf("%w: the write went into the database file as it was lost, and is in the rescued copy, not in the file now at the path (%s)", store.ErrOutcomeUnknown, lost.Error())
}

// CheckWrite proves that the store can take a write now, within ctx: Check
// passes, and a one-row write to health_probe commits (one fsync). It
// returns nil or the reason, wrapping store.ErrUnavailable where writes would
// fail. The daemon runs it only when the writes themselves say nothing:
// none for a long while, or the store not ready (ADR-0038).
func (s *Store) CheckWrite(ctx context.Context) error {
	if err := s.Check(ctx); err != nil {
		return err
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

// reserveMargin is how much more than shortBelow must be free before a
// store that ran short takes writes again. Without it a daemon ready at
// 1 MiB + 1 byte would resume its background writes (observations,
// presence, the probe), fall below 1 MiB within seconds, and go on eating
// the space an operator frees a little at a time (issue: 992 KB freed, 0
// bytes free again 40 s later). 1 MiB is again a few hundred transitions.
const reserveMargin = 1 << 20

// freeBytes is what the file system holding dir has free for this process
// (root may use the blocks reserved for it).
func freeBytes(dir string) (uint64, error) {
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		return 0, fmt.Errorf("statfs %s: %w", dir, err)
	}
	avail := st.Bavail
	if os.Geteuid() == 0 {
		avail = st.Bfree
	}
	return avail * uint64(st.Bsize), nil
}

// checkSpace keeps the store's reserve (hysteresis): it goes short below
// shortBelow free (the reserve and one write's headroom), or on a write
// failing with SQLITE_FULL, and stays short until shortBelow+reserveMargin
// are free. While short every write is refused (store.ErrShortOfSpace, wrapping
// store.ErrUnavailable): the API's, the daemon's own and the write
// probe's.
func (s *Store) checkSpace() error {
	file := FilePath(s.path)
	if file == "" {
		return nil
	}
	dir := filepath.Dir(file)
	measure := freeBytes
	if s.health.free != nil {
		measure = s.health.free
	}
	free, err := measure(dir)
	if err != nil {
		return fmt.Errorf("%w: %w", store.ErrUnavailable, err)
	}
	h := &s.health
	h.mu.Lock()
	defer h.mu.Unlock()
	need := uint64(shortBelow)
	if h.short {
		need += reserveMargin
	}
	if free >= need {
		h.short = false
		return nil
	}
	h.short = true
	if need > shortBelow {
		return fmt.Errorf("%w: %w: the disk holding %s is full (%d bytes free; after running short watchdog writes nothing, its own background writes included, until %d are free): free some space; watchdog recovers by itself",
			store.ErrUnavailable, store.ErrShortOfSpace, dir, free, need)
	}
	return fmt.Errorf("%w: %w: the disk holding %s is full (%d bytes free, at least %d needed): free some space; watchdog recovers by itself",
		store.ErrUnavailable, store.ErrShortOfSpace, dir, free, need)
}

// writable is the check before every write transaction: the identity
// (usable), and the reserve, measured now (one statfs, a few
// microseconds beside the commit's fsync): a write that could cross the
// reserve is refused before it begins, and a store short of space resumes
// as soon as the space is back, daemon or not.
func (s *Store) writable() error {
	if err := s.usable(); err != nil {
		return err
	}
	return s.checkSpace()
}

// QuickCheck runs PRAGMA quick_check over the whole database (every page
// read, every index checked against its table, without the slower
// index-content comparison of integrity_check) and returns an error
// naming the first problems and how to recover. The daemon refuses to
// start on it: a damaged page answers some queries and fails others,
// which no readiness probe can see.
func (s *Store) QuickCheck(ctx context.Context) error {
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

func (s *Store) quickCheckFailed(what string) error {
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
func (s *Store) Rescue(ctx context.Context, now time.Time) (string, error) {
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

// File is the database file, where a rescued copy goes back.
func (s *Store) File() string { return FilePath(s.path) }

// HealthEvents returns a channel told whenever the store's health may have
// changed: a write failing for the store's sake after none did, the first
// commit after that, and (inotify on the database's directory) the
// database file, its -wal or its -shm created, moved or removed. The daemon checks the store (Check) when told, so that
// a loss is seen at once without a stat a second, and falls back to its
// tick where no event can be had (an in-memory database, no inotify).
func (s *Store) HealthEvents() <-chan struct{} {
	s.identity.once.Do(func() {
		file := FilePath(s.path)
		if file == "" {
			return
		}
		tell := func() {
			// The event says the names may have changed: the next
			// Check stats them again.
			s.identityKnown.Store(false)
			s.writes.Tell()
		}
		if stop, err := watchFile(file, []string{"", "-wal", "-shm"}, identityMask, tell); err == nil {
			s.identity.stop = stop
			s.identityWatched.Store(true)
		}
	})
	return s.writes.HealthEvents()
}

// WriteHealth says what the store's write transactions showed lately
// (see WriteHealth): the daemon's readiness is made of it, the cheap
// checks (Check) and, only when no write came for a long while, a write
// probe.
func (s *Store) WriteHealth() store.WriteHealth { return s.writes.WriteHealth() }

// identityNet is how often Check stats the identity with no event.
const identityNet = 4 * time.Second

// Check says whether the store can take writes as far as can be seen
// without writing: identity, latched corruption, free space, a read-only
// mount, file access. It returns nil or the reason, wrapping
// store.ErrUnavailable.
func (s *Store) Check(context.Context) error {
	// stat the identity only after an event or identityNet (a move above the
	// watched directory raises none); writes check it anyway. Known before looking.
	now := time.Now().UnixNano()
	stale := now-s.identityAt.Load() >= int64(identityNet)
	if !s.identityWatched.Load() || !s.identityKnown.Swap(true) || stale {
		s.identityAt.Store(now)
		if err := s.usable(); err != nil {
			s.identityKnown.Store(false)
			return err
		}
	}
	if err := s.Fault(); err != nil {
		return err
	}
	if err := s.checkSpace(); err != nil {
		return err
	}
	return checkWritable(FilePath(s.path))
}

// checkWritable says whether this process may write file on a read-write
// mount (the file, not its directory: the pin keeps -wal and -shm).
func checkWritable(file string) error {
	if file == "" {
		return nil
	}
	var st unix.Statfs_t
	statErr := unix.Statfs(file, &st)
	if statErr == nil && st.Flags&unix.ST_RDONLY != 0 {
		return fmt.Errorf("%w: the file system holding %s is mounted read-only: remount it read-write (findmnt -T %s); watchdog recovers by itself",
			store.ErrUnavailable, file, filepath.Dir(file))
	}
	// statfs's flags say enough except on ext4, whose stopped state
	// (emergency_ro, shutdown) shows only in mountinfo: the proc file is
	// read only there.
	if statErr != nil || st.Type == unix.EXT4_SUPER_MAGIC {
		if opt := mountState(file); opt != "" {
			return fmt.Errorf("%w: the file system holding %s is read-only (the kernel shows it %s, after an error or a remount): check it (dmesg, findmnt -T %s); watchdog recovers by itself once it is writable again",
				store.ErrUnavailable, file, opt, filepath.Dir(file))
		}
	}
	err := unix.Faccessat(unix.AT_FDCWD, file, unix.W_OK, unix.AT_EACCESS)
	switch {
	case err == nil, errors.Is(err, unix.ENOENT):
		return nil
	case errors.Is(err, unix.EROFS):
		return fmt.Errorf("%w: the file system holding %s is read-only: remount it read-write (findmnt -T %s); watchdog recovers by itself",
			store.ErrUnavailable, file, filepath.Dir(file))
	}
	return fmt.Errorf("%w: %s is not writable by watchdog (%v): fix its owner or mode; watchdog recovers by itself", store.ErrUnavailable, file, err)
}

// mountState is the super-block option in /proc/self/mountinfo saying the
// mount holding file is not writable, "" otherwise: statfs misses ext4's
// emergency_ro after an error.
func mountState(file string) string {
	var stx unix.Statx_t
	if err := unix.Statx(unix.AT_FDCWD, file, 0, unix.STATX_MNT_ID, &stx); err != nil || stx.Mask&unix.STATX_MNT_ID == 0 {
		return ""
	}
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return ""
	}
	id := strconv.FormatUint(stx.Mnt_id, 10)
	for line := range strings.Lines(string(b)) {
		mntID, rest, ok := strings.Cut(line, " ")
		if !ok || mntID != id {
			continue
		}
		_, after, ok := strings.Cut(rest, " - ")
		if !ok {
			return ""
		}
		fields := strings.Fields(after) // fstype, source, super options
		if len(fields) < 3 {
			return ""
		}
		for opt := range strings.SplitSeq(fields[2], ",") {
			switch opt {
			case "ro", "emergency_ro", "shutdown":
				return opt
			}
		}
		return ""
	}
	return ""
}
