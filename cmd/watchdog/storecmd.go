package main

import (
	"os"
	"strings"

	"github.com/spf13/cobra"

	"watchdog/cmd/watchdog/internal/target"
	"watchdog/config"
	"watchdog/transitions"
)

// defaultDB is the database a command uses without --db or WATCHDOG_DB.
const defaultDB = target.DefaultDB

// addDBFlag gives a command the shared --db flag (env WATCHDOG_DB).
func addDBFlag(c *cobra.Command, db *string) {
	def := os.Getenv("WATCHDOG_DB")
	if def == "" {
		def = defaultDB
	}
	c.Flags().StringVar(db, "db", def, "SQLite database file, or a postgres:// URL (env WATCHDOG_DB)")
}

// configDB is a command's database: --db or WATCHDOG_DB, else the config's
// store.dsn, so it reads what the daemon does.
func configDB(cmd *cobra.Command, db string, cfg *config.Config) string {
	if cfg != nil && !cmd.Flags().Changed("db") && os.Getenv("WATCHDOG_DB") == "" {
		return cfg.Store.DSN
	}
	return db
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
