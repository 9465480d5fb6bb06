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

// Backend is every store method called outside the drivers; consumers
// declare the few they use. sqlite's and postgres's *Store implement it.
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
	// UpsertDismissals writes ds and one triage row each under one new batch id,
	// in one transaction: all or none.
	UpsertDismissals(ctx context.Context, ds []Dismissal) (batch string, err error)
	Dismissals(ctx context.Context) (map[string]Dismissal, error)
	// TriageLog reads rows with seq > after, oldest first, at most limit.
	TriageLog(ctx context.Context, after int64, limit int) ([]TriageEntry, error)
	// TriageLogBefore reads rows with seq < before (0: newest), newest first.
	TriageLogBefore(ctx context.Context, before int64, limit int) ([]TriageEntry, error)
	VacuumDismissals(ctx context.Context, now time.Time) (int, error)
	// VacuumTriage drops triage rows written before before and reports how many.
	VacuumTriage(ctx context.Context, before time.Time) (int, error)

	// Daemon presence.
	MarkDaemon(ctx context.Context, hostID string, at time.Time) error
	// MarkDaemonStart is MarkDaemon at start, also recording the hostname.
	MarkDaemonStart(ctx context.Context, hostID, hostname string, at time.Time) error
	// HostNames returns each host's hostname recorded at its last start.
	HostNames(ctx context.Context) (map[string]string, error)
	// RecordSettings records a host daemon's thresholds (YAML) and config file.
	RecordSettings(ctx context.Context, hostID string, s DaemonSettings) error
	// Settings returns what each host's daemon recorded last.
	Settings(ctx context.Context) (map[string]DaemonSettings, error)
	DaemonHosts(ctx context.Context, since time.Time) (map[string]bool, error)
	DaemonsSeen(ctx context.Context) (map[string]time.Time, error)

	// The change feed.
	ChangesSince(ctx context.Context, c Cursor, limit int) (Batch, error)
	// ChangesFor is ChangesSince narrowed by f (ADR-0056).
	ChangesFor(ctx context.Context, c Cursor, f FeedFilter, limit int) (Batch, error)
	FeedHead(ctx context.Context) (Cursor, error)
	DataVersion(ctx context.Context) (int64, error)

	// Health.
	Ping(ctx context.Context) error
	// CheckWrite proves by a one-row write that the store takes writes (ADR-0038).
	CheckWrite(ctx context.Context) error
	// Check is CheckWrite without the write.
	Check(ctx context.Context) error
	// WriteHealth is what the store's own write transactions showed.
	WriteHealth() WriteHealth
	// HealthEvents is told when the store's health may have changed.
	HealthEvents() <-chan struct{}
	Fault() error
	Lost() bool
	QuickCheck(ctx context.Context) error

	// Path names the store in logs (a URL without its password).
	Path() string
	Close() error
}

// Rescuer is a store that can copy what it still sees of a lost database
// (SQLite only, so not part of Backend).
type Rescuer interface {
	Rescue(ctx context.Context, now time.Time) (string, error)
	// File is the lost database's file, where a rescued copy goes back.
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
	// Unavailable reports whether an unmarked driver error still means the
	// store cannot be used and nothing was written (Classify). Nil: none such.
	Unavailable func(err error) bool
	// Check reports what would keep dsn from opening, seen without opening it.
	// Nil: nothing to check.
	Check func(dsn string) error
	// LockHost takes, before open, the lock letting one daemon of hostID serve
	// dsn, so a refused daemon does not even migrate. Nil: kept apart otherwise.
	LockHost func(dsn, hostID string) (release func() error, err error)
}

var (
	driversMu sync.Mutex
	drivers   = map[string]Driver{}
)

// Register makes Open open driver's stores with d. Drivers register when
// imported, so this package links no database library.
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
// postgresql:// URL, else sqlite.
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
