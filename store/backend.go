package store

import (
	"context"
	"fmt"
	"net/url"
	"strings"
	"sync"
	"time"

	"watchdog/state"
)

// Backend is the one store interface: every method of a store that code
// outside this package calls. The daemon and the CLI hold a Backend; each
// consumer still declares the few methods it uses (transitions.Store,
// api.Store, live.Source, ...), which any Backend satisfies. *SQLite is
// one, and watchdog/store/pgstore's *Store is the other.
type Backend interface {
	// The one write path's half: registration and compare-and-set.
	Register(ctx context.Context, e Entity, actor string, at time.Time) (created bool, err error)
	ApplyTransition(ctx context.Context, typ, id string, decide Decider) (before, after Entity, err error)

	// Reads.
	Get(ctx context.Context, typ, id string) (Entity, error)
	List(ctx context.Context, f Filter) ([]Entity, error)
	Transitions(ctx context.Context, typ, id string) ([]AuditRow, error)
	LatestTransitions(ctx context.Context, typ, id string, n int) ([]AuditRow, int, error)
	TransitionsAfter(ctx context.Context, typ, id string, after int64, limit int) ([]AuditRow, error)
	AttentionCandidates(ctx context.Context, since time.Time) ([]Entity, error)

	// Writes that never change a lifecycle.
	RecordObservation(ctx context.Context, typ, id string, o Observation) (bool, error)
	RecordHeartbeat(ctx context.Context, typ, id string, at time.Time, progress string) error
	RecordExit(ctx context.Context, typ, id string, pid int, x state.ExitStatus) (bool, error)

	// Attention dismissals.
	UpsertDismissal(ctx context.Context, d Dismissal) error
	Dismissals(ctx context.Context) (map[string]Dismissal, error)
	VacuumDismissals(ctx context.Context, now time.Time) (int, error)

	// Daemon presence.
	MarkDaemon(ctx context.Context, hostID string, at time.Time) error
	DaemonHosts(ctx context.Context, since time.Time) (map[string]bool, error)
	DaemonsSeen(ctx context.Context) (map[string]time.Time, error)

	// The change feed.
	ChangesSince(ctx context.Context, c Cursor, limit int) (Batch, error)
	FeedHead(ctx context.Context) (Cursor, error)
	DataVersion(ctx context.Context) (int64, error)

	// Health.
	Ping(ctx context.Context) error
	Probe(ctx context.Context) error
	// Check is Probe without the write: what can be seen of the store's
	// writability without writing anything.
	Check(ctx context.Context) error
	// WriteHealth is what the store's own write transactions showed.
	WriteHealth() WriteHealth
	// HealthEvents is told when the store's health may have changed.
	HealthEvents() <-chan struct{}
	Fault() error
	Lost() bool
	QuickCheck(ctx context.Context) error

	// Path names the store in logs and messages (a file path, or a
	// server's URL without its password).
	Path() string
	Close() error
}

// Rescuer is a store that can copy what it still sees of a lost database
// (SQLite's file deleted underneath it). A server database is never lost
// that way, so it is not part of Backend.
type Rescuer interface {
	Rescue(ctx context.Context, now time.Time) (string, error)
}

var _ Backend = (*SQLite)(nil)
var _ Rescuer = (*SQLite)(nil)

// The store drivers store.driver names.
const (
	DriverSQLite   = "sqlite"
	DriverPostgres = "postgres"
)

// Opener opens a store of one driver at dsn, applying its migrations.
type Opener func(ctx context.Context, dsn string) (Backend, error)

var (
	driversMu sync.Mutex
	drivers   = map[string]Opener{}
)

// RegisterDriver makes OpenBackend open driver's stores with open. A
// backend package registers itself when imported (pgstore does), so that
// package store does not import its own alternatives.
func RegisterDriver(driver string, open Opener) {
	driversMu.Lock()
	defer driversMu.Unlock()
	drivers[driver] = open
}

// DriverOf is the driver a bare DSN implies: postgres for a postgres:// or
// postgresql:// URL, else sqlite (a file path or file: URI). The CLI's --db
// takes either.
func DriverOf(dsn string) string {
	if IsPostgresDSN(dsn) {
		return DriverPostgres
	}
	return DriverSQLite
}

// IsPostgresDSN reports whether dsn is a PostgreSQL URL.
func IsPostgresDSN(dsn string) bool {
	l := strings.ToLower(strings.TrimSpace(dsn))
	return strings.HasPrefix(l, "postgres://") || strings.HasPrefix(l, "postgresql://")
}

// OpenBackend opens the store of driver ("" is sqlite) at dsn.
func OpenBackend(ctx context.Context, driver, dsn string) (Backend, error) {
	if driver == "" || driver == DriverSQLite {
		if IsPostgresDSN(dsn) {
			return nil, fmt.Errorf("open store: %s is a PostgreSQL URL: set store.driver: postgres", RedactDSN(dsn))
		}
		s, err := Open(ctx, dsn)
		if err != nil {
			return nil, err
		}
		return s, nil
	}
	driversMu.Lock()
	open, ok := drivers[driver]
	driversMu.Unlock()
	if !ok {
		return nil, fmt.Errorf("open store: driver %q is not built in", driver)
	}
	return open(ctx, dsn)
}

// RedactDSN is dsn fit for a log line: a URL's password is replaced by
// xxxxx; anything else is returned as is.
func RedactDSN(dsn string) string {
	u, err := url.Parse(dsn)
	if err != nil || u.User == nil {
		return dsn
	}
	if _, ok := u.User.Password(); ok {
		u.User = url.UserPassword(u.User.Username(), "xxxxx")
	}
	return u.String()
}
