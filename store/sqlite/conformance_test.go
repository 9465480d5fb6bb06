package sqlite_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"watchdog/internal/testenv"
	"watchdog/store"
	"watchdog/store/storetest"
)

func TestMain(m *testing.M) {
	storetest.HelperMain(openSQLite)
	os.Exit(m.Run())
}

func openSQLite(ctx context.Context, dsn string) (store.Backend, error) {
	return store.Open(ctx, store.DriverSQLite, dsn)
}

// TestConformance runs the one store suite against SQLite.
func TestConformance(t *testing.T) {
	storetest.Run(t, storetest.Harness{
		New:  func(t *testing.T) string { return filepath.Join(t.TempDir(), "watchdog.db") },
		Open: openSQLite,
		BareLifecycleUpdate: func(t *testing.T, dsn, typ, id, lifecycle string) error {
			_, err := testenv.SQL(t, dsn).Exec("UPDATE entities SET lifecycle = ? WHERE type = ? AND id = ?", lifecycle, typ, id)
			return err
		},
	})
}
