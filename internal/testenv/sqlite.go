package testenv

import (
	"database/sql"
	"testing"

	"watchdog/store/sqlite"
)

// SQL opens the database file at path beside the store that has it open,
// for what a test checks or breaks underneath the store's own methods
// (counting rows, a raw UPDATE, renaming a table). It has the store's
// pragmas, so its writes queue behind the store's like another process's.
func SQL(t testing.TB, path string) *sql.DB {
	t.Helper()
	db, err := sql.Open("sqlite", sqlite.DSN(path))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}
