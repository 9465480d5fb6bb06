// Package postgres is the PostgreSQL store (store.driver: postgres): the
// same logical schema as SQLite's, through its own numbered migrations,
// and the same behaviour behind store.Backend, which the conformance suite
// (watchdog/store/storetest) holds both to. It talks to the server through
// pgx and a pgxpool pool; one more connection, its own, listens for the
// change notifications that move DataVersion. Importing it registers the
// "postgres" driver with store.Open.
package postgres

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"watchdog/internal/unixtime"
	"watchdog/store"
	"watchdog/store/internal/writewatch"
)

func init() {
	store.Register(store.DriverPostgres, store.Driver{Open: func(ctx context.Context, dsn string) (store.Backend, error) {
		s, err := Open(ctx, dsn)
		if err != nil {
			return nil, err
		}
		return s, nil
	}})
}

// migrateLockKey is the advisory lock that serialises migrations: two
// daemons starting together against a fresh database apply them once.
// (7015713420150001 was the feed lock every write took until migration
// 0004; ADR-0053.)
const migrateLockKey int64 = 7015713420150000

// poolMaxConns is the pool's least size when the DSN does not set
// pool_max_conns (pgxpool's own default is max(4, CPUs)). Writers no
// longer wait for one another (ADR-0053), so a write holds a connection
// only for its round trips, and the API's concurrent writers each need
// one to overlap their commits: on two CPUs pgxpool's 4 left eight
// clients queueing for them. Connections open only as the load asks and
// close after half an hour idle.
const poolMaxConns = 12

// notifyChannel is the channel the store's notifier (tell) and migration
// 0001's trigger on attention_dismissals notify.
const notifyChannel = "watchdog_changes"

//go:embed migrations/*.sql
var migrationFS embed.FS

// Store is a PostgreSQL store. It is safe for concurrent use, and any
// number of daemons and CLI processes may share the database.
type Store struct {
	pool *pgxpool.Pool
	// columnFixes counts the transitions whose derived columns, written
	// with them, had to be written again (rederived): none expected.
	columnFixes atomic.Int64
	// dsn is the URL it was opened with; Path shows it without password.
	dsn string

	// version is DataVersion's counter: bumped by every notification the
	// listener hears and by every commit of this store's own.
	version atomic.Int64
	// changed receives (one buffered slot) whenever version moves: the
	// live view's wake-up (Changes).
	changed chan struct{}
	// listening is false while the listener has no connection: then
	// DataVersion moves on every call, so readers re-read rather than
	// miss what nobody told them.
	listening atomic.Bool
	stop      context.CancelFunc
	listener  sync.WaitGroup
	// stuck is the visibility horizon a DataVersion gave up waiting on
	// (settle): not waited on again.
	stuck atomic.Int64
	// behind is the horizon the follower waits for (0: none), and
	// followWake tells it of a new one (follow).
	behind     atomic.Int64
	followWake chan struct{}
	// untold is what this store's commits have not yet told the other
	// stores (under untoldMu), and tellWake wakes the notifier (tell).
	untoldMu sync.Mutex
	untold   told
	tellWake chan struct{}
	// wakeMu holds wakeOn, the hosts whose commits by other stores move
	// DataVersion (WakeFor); nil: every host's.
	wakeMu sync.RWMutex
	wakeOn *store.Hosts
	// self names this store in its notifications (newSelf).
	self string
	// writes records the write transactions' outcomes (WriteHealth).
	writes writewatch.Watch
}

var _ store.Backend = (*Store)(nil)

// Open connects to the PostgreSQL database at dsn (a postgres:// URL or a
// key=value string), applies pending migrations and starts listening for
// changes.
func Open(ctx context.Context, dsn string) (*Store, error) {
	name := store.RedactDSN(dsn)
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		return nil, fmt.Errorf("open store %s: %w", name, err)
	}
	guard(cfg.ConnConfig)
	if !strings.Contains(dsn, "pool_max_conns") { // the DSN's own choice wins
		cfg.MaxConns = max(cfg.MaxConns, poolMaxConns)
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("open store %s: %w", name, err)
	}
	s := &Store{pool: pool, dsn: dsn, changed: make(chan struct{}, 1), followWake: make(chan struct{}, 1), tellWake: make(chan struct{}, 1), self: newSelf()}
	if err := s.migrate(ctx); err != nil {
		pool.Close()
		return nil, fmt.Errorf("open store %s: %w", name, err)
	}
	conn, err := s.listen(ctx)
	if err != nil {
		pool.Close()
		return nil, fmt.Errorf("open store %s: %w", name, err)
	}
	lctx, stop := context.WithCancel(context.WithoutCancel(ctx))
	s.stop = stop
	s.listener.Go(func() { s.runListener(lctx, conn) })
	s.listener.Go(func() { s.runFollower(lctx) })
	s.listener.Go(func() { s.runNotifier(lctx) })
	return s, nil
}

// Path is the database URL without its password.
func (s *Store) Path() string { return store.RedactDSN(s.dsn) }

// Close stops the listener, tells the other stores of a commit not yet
// told (a CLI's write, just before it exits) and closes the pool.
func (s *Store) Close() error {
	s.stop()
	s.listener.Wait()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	s.notify(ctx)
	cancel()
	s.pool.Close()
	return nil
}

// Ping checks that the server answers a query.
func (s *Store) Ping(ctx context.Context) error {
	var one int
	if err := s.pool.QueryRow(ctx, "SELECT 1").Scan(&one); err != nil {
		return fmt.Errorf("ping store %s: %w", s.Path(), classify(err))
	}
	return nil
}

// CheckWrite proves that the store takes a write now: one row of health_probe
// is rewritten in a transaction of its own.
func (s *Store) CheckWrite(ctx context.Context) error {
	if err := s.Check(ctx); err != nil {
		return err
	}
	// Nobody reads the probe's row: the commit tells no host.
	err := s.writeOne(ctx, &told{}, func(q querier) error {
		_, err := q.Exec(ctx, "UPDATE health_probe SET at = $1 WHERE id = 1", unixtime.Seconds(time.Now()))
		return err
	})
	if err != nil {
		return fmt.Errorf("write probe: %w", err)
	}
	return nil
}

// Check is what can be seen of the server's writability without writing:
// it answers, and does not run read-only (a hot standby, or
// default_transaction_read_only). One round trip, no write: the daemon's
// readiness otherwise comes from the writes themselves (WriteHealth).
func (s *Store) Check(ctx context.Context) error {
	var readOnly string
	if err := s.pool.QueryRow(ctx, "SELECT current_setting('transaction_read_only')").Scan(&readOnly); err != nil {
		return fmt.Errorf("check store %s: %w", s.Path(), classify(err))
	}
	if readOnly == "on" {
		return fmt.Errorf("%w: the server of %s takes no writes (transaction_read_only is on: a standby, or default_transaction_read_only)", store.ErrUnavailable, s.Path())
	}
	return nil
}

// WriteHealth says what the store's write transactions showed lately.
func (s *Store) WriteHealth() store.WriteHealth { return s.writes.WriteHealth() }

// HealthEvents is told when a write fails for the store's sake after none
// did, and at the first commit after that. A server has no file to lose,
// so nothing else tells it.
func (s *Store) HealthEvents() <-chan struct{} { return s.writes.HealthEvents() }

// Fault is always nil: a server's damage shows as failing writes (CheckWrite),
// and the server, not watchdog, owns its recovery.
func (s *Store) Fault() error { return nil }

// Lost is always false: a server database cannot be deleted from under an
// open connection the way a file can.
func (s *Store) Lost() bool { return false }

// QuickCheck checks that the server answers: PostgreSQL checks its own
// pages (checksums, WAL replay); there is no quick_check to run.
func (s *Store) QuickCheck(ctx context.Context) error { return s.Ping(ctx) }

// classify turns what the server or the connection failed with into the
// store's vocabulary: a server that cannot take writes now (gone, shutting
// down, read-only, out of disk or connections) or a connection lost is
// store.ErrUnavailable, the API's 503. It is for failures that wrote
// nothing: a read's, or a write's before its COMMIT was sent; a failed
// COMMIT is commitFailed's.
func classify(err error) error {
	if err == nil || errors.Is(err, store.ErrUnavailable) || errors.Is(err, store.ErrOutcomeUnknown) ||
		errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		switch {
		case strings.HasPrefix(pe.Code, "08"), // connection exception
			strings.HasPrefix(pe.Code, "53"),  // insufficient resources (disk full, too many connections)
			strings.HasPrefix(pe.Code, "57P"), // operator intervention (shutdown, pg_terminate_backend)
			pe.Code == "25006":                // read_only_sql_transaction (a standby)
			return fmt.Errorf("%w: %w", store.ErrUnavailable, err)
		}
		return err
	}
	if pgconn.SafeToRetry(err) || pgconn.Timeout(err) || connectionLost(err) {
		return fmt.Errorf("%w: %w", store.ErrUnavailable, err)
	}
	var ce *pgconn.ConnectError
	if errors.As(err, &ce) {
		return fmt.Errorf("%w: %w", store.ErrUnavailable, err)
	}
	return err
}

// connectionLost reports an error of the connection itself rather than
// of the statement: the server closed it (a terminated backend, a
// restart) or the network failed.
func connectionLost(err error) bool {
	var ne net.Error
	return errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, net.ErrClosed) ||
		errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE) || errors.Is(err, syscall.ECONNREFUSED) ||
		errors.As(err, &ne)
}

// commitFailed classifies a failed COMMIT. Nothing sent (pgconn's
// SafeToRetry), or an ERROR the server answered it with (it rolled the
// transaction back): nothing was written, as classify says. Anything else
// (the connection lost after COMMIT was sent, a FATAL that may follow a
// commit the server made, a timeout waiting for the answer) leaves the
// write's outcome unknown: store.ErrOutcomeUnknown, the API's 504.
func commitFailed(err error) error {
	err = fmt.Errorf("commit: %w", err)
	var pe *pgconn.PgError
	switch {
	case errors.Is(err, pgx.ErrTxCommitRollback):
		return err // the transaction had failed already: the statement's error was returned before
	case pgconn.SafeToRetry(err):
		return fmt.Errorf("%w: %w", store.ErrUnavailable, err)
	case errors.As(err, &pe) && (pe.SeverityUnlocalized == "ERROR" || pe.SeverityUnlocalized == "" && pe.Severity == "ERROR"):
		return classify(err)
	}
	return fmt.Errorf("%w: the connection failed after COMMIT was sent: %w", store.ErrOutcomeUnknown, err)
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

// SchemaVersion is the highest PostgreSQL migration this build knows.
func SchemaVersion() int {
	ms, err := loadMigrations()
	if err != nil {
		return 0
	}
	return len(ms)
}

// migrate applies the pending migrations in one transaction that holds
// an advisory lock: a second daemon starting at the same moment waits for
// it, then finds them applied.
func (s *Store) migrate(ctx context.Context) error {
	ms, err := loadMigrations()
	if err != nil {
		return err
	}
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return fmt.Errorf("begin migration: %w", classify(err))
	}
	defer tx.Rollback(ctx) //nolint:errcheck // after Commit it is a no-op
	if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock($1)", migrateLockKey); err != nil {
		return fmt.Errorf("lock for migration: %w", classify(err))
	}
	if _, err := tx.Exec(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (
		version integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())`); err != nil {
		return fmt.Errorf("create schema_migrations: %w", err)
	}
	var current int
	if err := tx.QueryRow(ctx, "SELECT COALESCE(MAX(version), 0) FROM schema_migrations").Scan(&current); err != nil {
		return fmt.Errorf("read schema version: %w", err)
	}
	if current > len(ms) {
		return fmt.Errorf("database schema version %d is newer than this watchdog knows (%d): upgrade watchdog", current, len(ms))
	}
	for _, m := range ms[current:] {
		if _, err := tx.Exec(ctx, m.sql); err != nil {
			return fmt.Errorf("apply migration %s: %w", m.name, err)
		}
		if _, err := tx.Exec(ctx, "INSERT INTO schema_migrations (version, name) VALUES ($1, $2)", m.version, m.name); err != nil {
			return fmt.Errorf("record migration %s: %w", m.name, err)
		}
	}
	if err := tx.Commit(ctx); err != nil {
		return fmt.Errorf("commit migrations: %w", classify(err))
	}
	return nil
}

// writeTx runs fn in one write transaction. Writers run side by side: the
// feed orders by transaction below the horizon (ADR-0053), so no lock orders
// commits. A commit moves DataVersion at once; t is what the commit tells (told).
func (s *Store) writeTx(ctx context.Context, t *told, fn func(tx pgx.Tx) error) (err error) {
	s.writes.Start()
	defer func() { s.writes.Done(err) }()
	err = s.writeTxOnce(ctx, t, fn)
	// A deadlock or serialization failure rolled this transaction back
	// whole (two writers taking rows in opposite orders, a writer outside
	// watchdog), so running it once more is safe.
	if retryable(err) {
		err = s.writeTxOnce(ctx, t, fn)
	}
	return err
}

// retryable reports a failure the server rolled back for another
// writer's sake: a deadlock or a serialization failure.
func retryable(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && (pe.Code == "40P01" || pe.Code == "40001")
}

// writeTxOnce is one attempt of writeTx.
func (s *Store) writeTxOnce(ctx context.Context, t *told, fn func(tx pgx.Tx) error) error {
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return classify(fmt.Errorf("begin: %w", err))
	}
	defer tx.Rollback(context.WithoutCancel(ctx)) //nolint:errcheck // after Commit it is a no-op
	if err := fn(tx); err != nil {
		return beforeCommit(tx, err)
	}
	if err := tx.Commit(ctx); err != nil {
		return commitFailed(err)
	}
	s.committed(t)
	return nil
}

// writeOne runs fn, a single statement, in autocommit: one round trip, and an
// answer is a durable write. Failures are classified as a COMMIT's
// (commitFailed). It moves DataVersion and tells t like writeTx.
func (s *Store) writeOne(ctx context.Context, t *told, fn func(q querier) error) (err error) {
	s.writes.Start()
	defer func() { s.writes.Done(err) }()
	for attempt := 0; ; attempt++ {
		err = fn(s.pool)
		if attempt == 0 && retryable(err) {
			continue
		}
		break
	}
	if err != nil {
		return statementFailed(err)
	}
	s.committed(t)
	return nil
}

// querier is what a single statement runs on: the pool, or a transaction.
type querier interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// statementFailed classifies the failure of a statement run on its own
// (writeOne): the statement's own commit failed with it.
func statementFailed(err error) error {
	if errors.Is(err, store.ErrNotFound) || errors.Is(err, store.ErrConflict) {
		return err // the caller's finding, not the server's
	}
	var pe *pgconn.PgError
	switch {
	case pgconn.SafeToRetry(err):
		return fmt.Errorf("%w: %w", store.ErrUnavailable, err)
	case errors.As(err, &pe) && (pe.SeverityUnlocalized == "ERROR" || pe.SeverityUnlocalized == "" && pe.Severity == "ERROR"):
		return classify(err)
	}
	return fmt.Errorf("%w: the connection failed while the statement ran: %w", store.ErrOutcomeUnknown, err)
}

// beforeCommit classifies a write's failure before its COMMIT: nothing
// was written. An error classify does not know as the connection's is
// still one when the connection is gone with it (pgx closes it on a
// protocol or network failure): the store, not the request, failed.
func beforeCommit(tx pgx.Tx, err error) error {
	err = classify(err)
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err // the caller gave up (pgx closes the connection then too)
	}
	if !errors.Is(err, store.ErrUnavailable) && tx.Conn().IsClosed() {
		return fmt.Errorf("%w: the connection was lost: %w", store.ErrUnavailable, err)
	}
	return err
}

// guard keeps one stalled client from stalling the fleet: a session idle in a
// transaction is ended after 15 s instead of holding row locks and the feed's
// horizon (ADR-0053), and dead TCP peers are noticed in about half a minute.
func guard(c *pgx.ConnConfig) {
	if c.RuntimeParams == nil {
		c.RuntimeParams = map[string]string{}
	}
	for k, v := range map[string]string{
		"idle_in_transaction_session_timeout": "15000",
		"tcp_keepalives_idle":                 "10",
		"tcp_keepalives_interval":             "5",
		"tcp_keepalives_count":                "3",
		"tcp_user_timeout":                    "30000",
	} {
		if _, set := c.RuntimeParams[k]; !set { // the DSN's own choice wins
			c.RuntimeParams[k] = v
		}
	}
	d := &net.Dialer{Timeout: 10 * time.Second, KeepAliveConfig: net.KeepAliveConfig{Enable: true, Idle: 10 * time.Second, Interval: 5 * time.Second, Count: 3}}
	c.DialFunc = d.DialContext
}

// connConfig is the store's DSN as a guarded configuration for a
// dedicated connection (the listener's, the leader's).
func (s *Store) connConfig() (*pgx.ConnConfig, error) {
	c, err := pgx.ParseConfig(s.dsn)
	if err != nil {
		return nil, err
	}
	guard(c)
	return c, nil
}
