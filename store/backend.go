package store

import (
	"context"
	"fmt"
	"net/url"
	"sort"
	"strings"
	"sync"
	"time"
)

// Backend is the one store interface: every method of a store that code
// outside the drivers calls. The daemon and the CLI hold a Backend; each
// consumer still declares the few methods it uses (transitions.Store,
// api.Store, live.Source, ...), which any Backend satisfies.
// watchdog/store/sqlite's *Store is one, and watchdog/store/postgres's
// *Store is the other.
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

	// Attention dismissals.
	UpsertDismissal(ctx context.Context, d Dismissal) error
	// UpsertDismissals writes every dismissal of ds (UpsertDismissal's
	// rules each) and one triage log row per dismissal, all under one
	// new batch id it returns, in one transaction: all or none. An
	// incomplete dismissal anywhere in ds refuses the whole batch.
	// UpsertDismissal is a batch of one.
	UpsertDismissals(ctx context.Context, ds []Dismissal) (batch string, err error)
	Dismissals(ctx context.Context) (map[string]Dismissal, error)
	// TriageLog reads the triage log's rows with seq > after, oldest
	// first, at most limit.
	TriageLog(ctx context.Context, after int64, limit int) ([]TriageEntry, error)
	// TriageLogBefore reads the triage log's rows with seq < before (0:
	// from the newest), newest first, at most limit: GET
	// /api/attention/triage's pages.
	TriageLogBefore(ctx context.Context, before int64, limit int) ([]TriageEntry, error)
	VacuumDismissals(ctx context.Context, now time.Time) (int, error)
	// VacuumTriage drops the triage log's rows written (their At) before
	// before, the vacuum job's cut (thresholds.triage_retention ago), and
	// reports how many.
	VacuumTriage(ctx context.Context, before time.Time) (int, error)

	// Daemon presence.
	MarkDaemon(ctx context.Context, hostID string, at time.Time) error
	// MarkDaemonStart is MarkDaemon at a daemon's start, recording the
	// hostname of its machine as well (a later start's replaces it).
	MarkDaemonStart(ctx context.Context, hostID, hostname string, at time.Time) error
	// HostNames returns the hostname each host's daemon recorded at its
	// last start; a host without one is absent.
	HostNames(ctx context.Context) (map[string]string, error)
	// RecordSettings records the settings a host's daemon judges with
	// (its thresholds section, as YAML) and the config file they came
	// from ("" for the defaults), at its start and at each reload.
	RecordSettings(ctx context.Context, hostID string, s DaemonSettings) error
	// Settings returns what each host's daemon recorded last; a host
	// whose daemon recorded none is absent.
	Settings(ctx context.Context) (map[string]DaemonSettings, error)
	DaemonHosts(ctx context.Context, since time.Time) (map[string]bool, error)
	DaemonsSeen(ctx context.Context) (map[string]time.Time, error)

	// The change feed.
	ChangesSince(ctx context.Context, c Cursor, limit int) (Batch, error)
	// ChangesFor is ChangesSince narrowed by f: the entities of some
	// hosts only (a fleet's daemon reads what it owns, ADR-0056), and
	// with f.EntitiesOnly no audit rows.
	ChangesFor(ctx context.Context, c Cursor, f FeedFilter, limit int) (Batch, error)
	FeedHead(ctx context.Context) (Cursor, error)
	DataVersion(ctx context.Context) (int64, error)

	// Health.
	Ping(ctx context.Context) error
	// CheckWrite proves, by a one-row write of its own, that the store
	// takes a write now (the daemon's write probe, ADR-0038).
	CheckWrite(ctx context.Context) error
	// Check is CheckWrite without the write: what can be seen of the
	// store's writability without writing anything.
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
	// File is the lost database's file, where a rescued copy goes back:
	// what the daemon's one line about the loss tells an operator to
	// replace.
	File() string
}

// The store drivers store.driver names.
const (
	DriverSQLite   = "sqlite"
	DriverPostgres = "postgres"
)

// Driver is one store implementation as it registers itself (Register).
type Driver struct {
	// Open opens a store of the driver at dsn, applying its migrations.
	Open func(ctx context.Context, dsn string) (Backend, error)
	// Unavailable reports whether err, an error of the driver's own that
	// a call returned without marking it (ErrUnavailable,
	// ErrOutcomeUnknown), still says that the store cannot be used now
	// and nothing was written (Classify). Nil when the driver marks every
	// such error itself.
	Unavailable func(err error) bool
	// Check reports what would keep a store at dsn from opening that can
	// be seen without opening it (SQLite: the database's directory), for
	// check-config and the daemon's start. Nil: nothing to check.
	Check func(dsn string) error
	// LockHost takes, before the store opens, the lock that lets one
	// daemon of hostID serve the store at dsn (SQLite: a lock file beside
	// the database), so that a refused daemon does not even migrate. Nil:
	// the driver keeps the daemons of a host apart otherwise (PostgreSQL:
	// a SessionLock, once open).
	LockHost func(dsn, hostID string) (release func() error, err error)
}

var (
	driversMu sync.Mutex
	drivers   = map[string]Driver{}
)

// Register makes Open open driver's stores with d. Each driver package
// registers itself when imported (database/sql's way), so that this
// package links neither database library: a program that opens a store by
// driver imports the drivers it offers, and one that only reads the types
// (the CLI's HTTP client) links none.
func Register(driver string, d Driver) {
	driversMu.Lock()
	defer driversMu.Unlock()
	if d.Open == nil {
		panic("store: Register of driver " + driver + " without Open")
	}
	if _, dup := drivers[driver]; dup {
		panic("store: Register called twice for driver " + driver)
	}
	drivers[driver] = d
}

// registered is every registered driver, in name order.
func registered() []Driver {
	driversMu.Lock()
	defer driversMu.Unlock()
	names := make([]string, 0, len(drivers))
	for n := range drivers {
		names = append(names, n)
	}
	sort.Strings(names)
	out := make([]Driver, 0, len(names))
	for _, n := range names {
		out = append(out, drivers[n])
	}
	return out
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

// Open opens the store of driver ("" is sqlite) at dsn, through the
// driver registered under that name.
func Open(ctx context.Context, driver, dsn string) (Backend, error) {
	if driver == "" {
		driver = DriverSQLite
	}
	if driver == DriverSQLite && IsPostgresDSN(dsn) {
		return nil, fmt.Errorf("open store: %s is a PostgreSQL URL: set store.driver: postgres", RedactDSN(dsn))
	}
	d, ok := lookup(driver)
	if !ok {
		return nil, fmt.Errorf("open store: driver %q is not built in", driver)
	}
	return d.Open(ctx, dsn)
}

// lookup is the driver registered under driver ("" is sqlite).
func lookup(driver string) (Driver, bool) {
	if driver == "" {
		driver = DriverSQLite
	}
	driversMu.Lock()
	defer driversMu.Unlock()
	d, ok := drivers[driver]
	return d, ok
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
