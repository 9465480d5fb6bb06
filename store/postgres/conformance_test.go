package postgres_test

import (
	"context"
	"os"
	"testing"

	"github.com/jackc/pgx/v5"

	"watchdog/internal/testenv"
	"watchdog/store"
	"watchdog/store/postgres"
	"watchdog/store/storetest"
)

func TestMain(m *testing.M) {
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
	})
}

var _ = postgres.SchemaVersion
