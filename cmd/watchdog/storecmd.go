package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"watchdog/store"
	"watchdog/transitions"
)

// defaultDB is the database a command uses without --db or WATCHDOG_DB;
// the same default as `watchdog serve` with no config.
const defaultDB = "./watchdog.db"

// addDBFlag gives a command the shared --db flag (env WATCHDOG_DB).
func addDBFlag(c *cobra.Command, db *string) {
	def := os.Getenv("WATCHDOG_DB")
	if def == "" {
		def = defaultDB
	}
	c.Flags().StringVar(db, "db", def, "SQLite database file (env WATCHDOG_DB)")
}

// openStore opens the database. A reading command refuses a file that does
// not exist rather than creating an empty one: a mistyped --db must say so,
// not report an empty host.
func openStore(ctx context.Context, path string, create bool) (*store.SQLite, error) {
	if !create && !strings.HasPrefix(path, "file:") {
		if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("no database at %s (set --db or WATCHDOG_DB)", path)
		}
	}
	return store.Open(ctx, path)
}

// parseRef splits TYPE/ID and resolves the type's alias.
func parseRef(ref string) (typ, id string, err error) {
	typ, id, ok := strings.Cut(ref, "/")
	if !ok || typ == "" || id == "" {
		return "", "", usageError("%q is not TYPE/ID (e.g. session/s-42)", ref)
	}
	canon, known := transitions.CanonicalType(typ)
	if !known {
		return "", "", usageError("unknown entity type %q (known: %s)", typ, strings.Join(transitions.Types(), ", "))
	}
	return canon, id, nil
}
