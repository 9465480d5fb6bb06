package main

import (
	"os"

	"github.com/spf13/cobra"

	"watchdog/cmd/watchdog/internal/target"
	"watchdog/tokenfile"
)

// addServerFlag gives a command the --server flag (env WATCHDOG_SERVER):
// through a daemon's API instead of the database.
func addServerFlag(c *cobra.Command, server *string) {
	c.Flags().StringVar(server, "server", os.Getenv("WATCHDOG_SERVER"),
		"daemon API base URL, e.g. http://127.0.0.1:9715, used instead of --db (env WATCHDOG_SERVER; token from WATCHDOG_TOKEN_FILE)")
}

// addTargetFlags gives a writing command both --db and --server.
func addTargetFlags(c *cobra.Command, db, server *string) {
	addDBFlag(c, db)
	addServerFlag(c, server)
	f := c.Flags()
	f.Lookup("db").Usage = "SQLite database file, or a postgres:// URL (env WATCHDOG_DB); not with --server"
	f.Lookup("server").Usage = "write through the daemon's API at this URL, e.g. http://127.0.0.1:9715, instead of opening a database " +
		"(env WATCHDOG_SERVER; bearer token read from the file in WATCHDOG_TOKEN_FILE, else watchdog.token beside WATCHDOG_DB or ./watchdog.db, else " + tokenfile.SystemPath + "). " +
		"--db and --server together, or WATCHDOG_DB and WATCHDOG_SERVER together without either flag, are a usage error; " +
		"a flag overrides the other's environment variable"
}

// resolveTarget decides, by target.Choice's rule and before anything is
// opened, where a command goes; a contradiction is a usage error.
func resolveTarget(c *cobra.Command, db, server string) (target.Choice, error) {
	to := target.Choice{
		Server: server, DB: db, Host: localHost(),
		DBFlag: c.Flags().Changed("db"), ServerFlag: c.Flags().Changed("server"),
		EnvDB: os.Getenv("WATCHDOG_DB") != "", ConfigFlag: c.Flags().Changed("config"),
	}
	if server == "" && !to.DBFlag && !to.EnvDB && !to.ConfigFlag {
		to.Socket = target.FindSocket(db)
	}
	if _, err := to.Remote(); err != nil {
		return to, usageError("%v", err)
	}
	return to, nil
}

// addReadFlags gives status and attention both --db and --server.
func addReadFlags(c *cobra.Command, db, server *string) {
	addDBFlag(c, db)
	addServerFlag(c, server)
	f := c.Flags()
	f.Lookup("db").Usage = "SQLite database file, or a postgres:// URL (env WATCHDOG_DB); not with --server"
	f.Lookup("server").Usage = "read the daemon's API at this URL, e.g. http://127.0.0.1:9715, instead of opening a database: any daemon of a fleet shows every host " +
		"(env WATCHDOG_SERVER; bearer token from the file in WATCHDOG_TOKEN_FILE, else found as for the writing commands). " +
		"--db and --server together are a usage error; a flag overrides the other's environment variable"
}
