// Package sqlite is the embedded store (the default): one SQLite file shared
// by the daemon and CLI processes, with group commit, inotify change signals,
// file identity and disk reserve. Importing it registers the "sqlite" driver.
package sqlite

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"watchdog/store/internal/writewatch"

	_ "modernc.org/sqlite" // registers the "sqlite" database/sql driver
)

// Store is the embedded store, safe for concurrent use and shareable across
// processes: WAL readers, BEGIN IMMEDIATE writes so a read-then-write decision
// holds, and busy_timeout to queue writers.
type Store struct {
	db   *sql.DB
	path string
	// writeMu serialises this process's write transactions, so SQLite's
	// lock arbitrates only between processes.
	writeMu sync.Mutex
	// group queues the writes that share a commit (see groupWrite).
	group committer

	stmtMu sync.Mutex
	stmts  map[string]*sql.Stmt

	// pin is held open for the store's lifetime (watchIdentity); nil in memory.
	// pinMu serializes its users (SQLite refuses VACUUM mid-statement).
	pin    *sql.Conn
	pinMu  sync.Mutex
	health health
	// changes is the change signal Changes hands out (inotify on the
	// file), started on first use.
	changes changes
	// writes records the write transactions' outcomes (WriteHealth);
	// identity is the inotify watch of the files' names that tells its
	// reader (HealthEvents), started on first use.
	writes   writewatch.Watch
	identity changes
	// identityKnown is set while the watch runs and no event came since the
	// last check: Check then skips the stat(2) calls.
	identityKnown atomic.Bool
	// identityWatched is set once the identity watch runs.
	identityWatched atomic.Bool
	// identityAt is when Check last looked at the identity (Unix ns).
	identityAt atomic.Int64
}

//go:embed migrations/*.sql
var migrationFS embed.FS

// BusyTimeoutMS is how long a writer waits for the lock before giving up.
const BusyTimeoutMS = 10000

// CacheKiB is each connection's page cache, in KiB (PRAGMA cache_size).
const CacheKiB = 64

// MaxConns is how many connections the pool opens and keeps: each costs
// about 480 KB, and four suffice (ADR-0052, ADR-0060).
const MaxConns = 4

// walCheckpointPages is how many WAL frames accumulate before a checkpoint:
// what a write must find free above the reserve (writeHeadroom).
const walCheckpointPages = 256

// DSN turns a path (or file: URI) into the driver DSN with watchdog's pragmas:
// synchronous=FULL so an acknowledged transition survives a power cut, and a
// small per-connection cache (CacheKiB; ADR-0052).
func DSN(path string) string {
	base, query := path, ""
	if strings.HasPrefix(path, "file:") {
		if i := strings.IndexByte(path, '?'); i >= 0 {
			base, query = path[:i], path[i+1:]
		}
	} else {
		// A URI's path: '?' would start its query and '#' its fragment,
		// and SQLite decodes %HH (a path "/tmp/x#y/w.db" must not open
		// /tmp/x).
		base = "file:" + uriPath.Replace(path)
	}
	v, _ := url.ParseQuery(query)
	v.Add("_pragma", "busy_timeout("+strconv.Itoa(BusyTimeoutMS)+")")
	v.Add("_pragma", "journal_mode(WAL)")
	v.Add("_pragma", "foreign_keys(1)")
	v.Add("_pragma", "synchronous(FULL)")
	v.Add("_pragma", "cache_size(-"+strconv.Itoa(CacheKiB)+")")
	v.Add("_pragma", "wal_autocheckpoint("+strconv.Itoa(walCheckpointPages)+")")
	v.Add("_pragma", "journal_size_limit("+strconv.Itoa(walCheckpointPages*4096*2)+")")
	v.Set("_txlock", "immediate")
	return base + "?" + v.Encode()
}

var uriPath = strings.NewReplacer("%", "%25", "?", "%3F", "#", "%23")

// Open opens (creating if needed) the SQLite database at path and applies
// pending migrations.
func Open(ctx context.Context, path string) (*Store, error) {
	if strings.TrimSpace(path) == "" {
		return nil, fmt.Errorf("open store: empty database path")
	}
	dsn := DSN(path)
	if file := FilePath(path); file != "" && !strings.Contains(dsn, "mode=") {
		// Created here once; pooled connections open without creating, so one
		// opened after deletion fails rather than start an empty database.
		f, err := os.OpenFile(file, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
		switch {
		case err == nil:
			// A new, empty inode: no SQLite lock of this process is on
			// it, so closing it drops none.
			f.Close()
		case !errors.Is(err, os.ErrExist):
			return nil, fmt.Errorf("open store %s: %w", path, err)
		}
		dsn += "&mode=rw"
	}
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, fmt.Errorf("open store %s: %w", path, err)
	}
	db.SetMaxOpenConns(MaxConns)
	// Keep every connection: one opened after the file was replaced would
	// recover the old WAL into the new file (watchIdentity).
	db.SetMaxIdleConns(MaxConns)
	s := &Store{db: db, path: path}
	s.writes.DatabaseError = databaseError
	if err := s.migrate(ctx); err != nil {
		db.Close()
		return nil, fmt.Errorf("open store %s: %w", path, err)
	}
	if err := s.watchIdentity(ctx); err != nil {
		s.Close()
		return nil, fmt.Errorf("open store %s: %w", path, err)
	}
	return s, nil
}

// Path is the database location the store was opened with.
func (s *Store) Path() string { return s.path }

// Close closes the database.
func (s *Store) Close() error {
	s.closeChanges()
	if s.identity.stop != nil {
		s.identity.stop()
	}
	s.closeStmts()
	if s.pin != nil {
		s.pin.Close()
	}
	return s.db.Close()
}

// Ping checks that the database answers a query (a read: CheckWrite checks
// that it takes a write).
func (s *Store) Ping(ctx context.Context) error {
	var one int
	if err := s.db.QueryRowContext(ctx, "SELECT 1").Scan(&one); err != nil {
		return fmt.Errorf("ping store %s: %w", s.path, err)
	}
	return nil
}

type migration struct {
	version int
	name    string
	sql     string
}

func loadMigrations() ([]migration, error) {
	files, err := fs.Glob(migrationFS, "migrations/*.sql")
	if err != nil {
		return nil, err
	}
	var out []migration
	for _, f := range files {
		name := strings.TrimPrefix(f, "migrations/")
		n, err := strconv.Atoi(strings.SplitN(name, "_", 2)[0])
		if err != nil {
			return nil, fmt.Errorf("migration %s: name must start with its number", name)
		}
		body, err := migrationFS.ReadFile(f)
		if err != nil {
			return nil, err
		}
		out = append(out, migration{version: n, name: name, sql: string(body)})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].version < out[j].version })
	for i, m := range out {
		if m.version != i+1 {
			return nil, fmt.Errorf("migration %s: expected number %d", m.name, i+1)
		}
	}
	return out, nil
}

// SchemaVersion is the highest migration this build knows.
func SchemaVersion() int {
	ms, err := loadMigrations()
	if err != nil {
		return 0
	}
	return len(ms)
}

// migrate applies pending migrations in one write transaction, so two
// processes opening a fresh file at once cannot both apply them.
func (s *Store) migrate(ctx context.Context) error {
	ms, err := loadMigrations()
	if err != nil {
		return err
	}
	return s.writeTx(ctx, func() error { return s.applyMigrations(ctx, ms) })
}

func (s *Store) applyMigrations(ctx context.Context, ms []migration) error {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("begin migration: %w", err)
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (
		version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TEXT NOT NULL DEFAULT (datetime('now')))`); err != nil {
		return fmt.Errorf("create schema_migrations: %w", err)
	}
	var current int
	if err := tx.QueryRowContext(ctx, "SELECT COALESCE(MAX(version), 0) FROM schema_migrations").Scan(&current); err != nil {
		return fmt.Errorf("read schema version: %w", err)
	}
	if current > len(ms) {
		return fmt.Errorf("database schema version %d is newer than this watchdog knows (%d): upgrade watchdog", current, len(ms))
	}
	for _, m := range ms[current:] {
		if _, err := tx.ExecContext(ctx, m.sql); err != nil {
			return fmt.Errorf("apply migration %s: %w", m.name, err)
		}
		if _, err := tx.ExecContext(ctx, "INSERT INTO schema_migrations (version, name) VALUES (?, ?)", m.version, m.name); err != nil {
			return fmt.Errorf("record migration %s: %w", m.name, err)
		}
	}
	return tx.Commit()
}
