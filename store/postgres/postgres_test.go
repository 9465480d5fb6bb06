package postgres_test

import (
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"

	"watchdog/internal/testenv"
	"watchdog/store/postgres"
)

// TestOpenTogetherMigratesOnce: daemons starting at the same moment on a
// fresh database apply the migrations once, behind the advisory lock.
func TestOpenTogetherMigratesOnce(t *testing.T) {
	dsn := testenv.Postgres(t)
	ctx := context.Background()
	const n = 4
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			s, err := postgres.Open(ctx, dsn)
			if err == nil {
				s.Close()
			}
			errs[i] = err
		})
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("open %d: %v", i, err)
		}
	}
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var rows, max int
	if err := conn.QueryRow(ctx, "SELECT COUNT(*), MAX(version) FROM schema_migrations").Scan(&rows, &max); err != nil {
		t.Fatal(err)
	}
	if rows != postgres.SchemaVersion() || max != postgres.SchemaVersion() {
		t.Errorf("schema_migrations: %d rows up to %d, want %d", rows, max, postgres.SchemaVersion())
	}
}

// TestOpenRefusesNewerSchema: a database migrated by a newer watchdog is
// refused with a message that says to upgrade.
func TestOpenRefusesNewerSchema(t *testing.T) {
	dsn := testenv.Postgres(t)
	ctx := context.Background()
	s, err := postgres.Open(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "INSERT INTO schema_migrations (version, name) VALUES (999, '0999_future.sql')"); err != nil {
		t.Fatal(err)
	}
	if s, err := postgres.Open(ctx, dsn); err == nil {
		s.Close()
		t.Fatal("opened a database of a newer schema")
	} else if want := "upgrade watchdog"; !strings.Contains(err.Error(), want) {
		t.Errorf("error %q does not say %q", err, want)
	}
}
