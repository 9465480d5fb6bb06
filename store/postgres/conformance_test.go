package postgres_test

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"watchdog/internal/testenv"
	"watchdog/live"
	"watchdog/store"
	"watchdog/store/postgres"
	"watchdog/store/storetest"
)

func TestMain(m *testing.M) {
	// The derivation the daemon and the CLI give the drivers before they
	// open a store: the tests' writes leave fresh columns.
	store.SetDerivation(live.Columns)
	storetest.HelperMain(openPostgres)
	os.Exit(testenv.PostgresMain(m))
}

func openPostgres(ctx context.Context, dsn string) (store.Backend, error) {
	return store.Open(ctx, store.DriverPostgres, dsn)
}

// TestConformance runs the one store suite against PostgreSQL: each
// subtest on a fresh database of the test cluster.
func TestConformance(t *testing.T) {
	storetest.Run(t, storetest.Harness{
		New:  func(t *testing.T) string { return testenv.Postgres(t) },
		Open: openPostgres,
		BareLifecycleUpdate: func(t *testing.T, dsn, typ, id, lifecycle string) error {
			ctx := context.Background()
			conn, err := pgx.Connect(ctx, dsn)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close(ctx)
			_, err = conn.Exec(ctx, "UPDATE entities SET lifecycle = $1 WHERE type = $2 AND id = $3", lifecycle, typ, id)
			return err
		},
		Quiesce: func(t *testing.T, dsn string) {
			ctx := context.Background()
			conn, err := pgx.Connect(ctx, dsn)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close(ctx)
			testenv.Eventually(t, "the killed writer's sessions to end", 5*time.Minute, func() (bool, string) {
				var n int
				if err := conn.QueryRow(ctx, `SELECT COUNT(*) FROM pg_stat_activity
					WHERE datname = current_database() AND backend_type = 'client backend' AND pid <> pg_backend_pid()`).Scan(&n); err != nil {
					return false, err.Error()
				}
				return n == 0, fmt.Sprintf("%d other sessions", n)
			})
		},
		HoldWrite: func(t *testing.T, dsn, typ, id, progress string) func() {
			ctx := context.Background()
			conn, err := pgx.Connect(ctx, dsn)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { conn.Close(ctx) })
			tx, err := conn.Begin(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := tx.Exec(ctx, "UPDATE entities SET heartbeat_progress = $1 WHERE type = $2 AND id = $3", progress, typ, id); err != nil {
				t.Fatal(err)
			}
			if _, err := tx.Exec(ctx, `INSERT INTO transitions (seq, entity_type, entity_id, from_lifecycle, to_lifecycle, message, actor, at)
				SELECT 0, type, id, lifecycle, lifecycle, $1, 'operator', 0 FROM entities WHERE type = $2 AND id = $3`, progress, typ, id); err != nil {
				t.Fatal(err)
			}
			return func() {
				if err := tx.Commit(ctx); err != nil {
					t.Fatalf("commit the held write: %v", err)
				}
			}
		},
	})
}

var _ = postgres.SchemaVersion
