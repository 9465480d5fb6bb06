package main

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"

	"github.com/spf13/cobra"

	"watchdog/client"
	"watchdog/probe"
	"watchdog/target"
	"watchdog/tokenfile"
)

// addServerFlag gives a writing command the --server flag (env
// WATCHDOG_SERVER): with it the command goes through a running daemon's
// API instead of opening the database, which on a hardened host the agents
// cannot do.
func addServerFlag(c *cobra.Command, server *string) {
	c.Flags().StringVar(server, "server", os.Getenv("WATCHDOG_SERVER"),
		"daemon API base URL, e.g. http://127.0.0.1:9715, used instead of --db (env WATCHDOG_SERVER; token from WATCHDOG_TOKEN_FILE)")
}

// addTargetFlags gives register, heartbeat and transition both --db and
// --server, with help that states how resolveTarget chooses between them.
func addTargetFlags(c *cobra.Command, db, server *string) {
	addDBFlag(c, db)
	addServerFlag(c, server)
	f := c.Flags()
	f.Lookup("db").Usage = "SQLite database file (env WATCHDOG_DB); not with --server"
	f.Lookup("server").Usage = "write through the daemon's API at this URL, e.g. http://127.0.0.1:9715, instead of opening a database " +
		"(env WATCHDOG_SERVER; bearer token read from the file in WATCHDOG_TOKEN_FILE, else watchdog.token beside WATCHDOG_DB or ./watchdog.db, else " + tokenfile.SystemPath + "). " +
		"--db and --server together, or WATCHDOG_DB and WATCHDOG_SERVER together without either flag, are a usage error; " +
		"a flag overrides the other's environment variable"
}

// where is a writing command's choice between the database and a daemon,
// made by resolveTarget before anything is opened.
type where struct {
	db, server string
	remote     bool
}

// resolveTarget decides, by target.Choice's rule, whether a writing
// command goes through the daemon or opens the database.
func resolveTarget(c *cobra.Command, db, server string) (where, error) {
	remote, err := target.Choice{
		Server: server, DBFlag: c.Flags().Changed("db"), ServerFlag: c.Flags().Changed("server"),
		EnvDB: os.Getenv("WATCHDOG_DB") != "",
	}.Remote()
	if err != nil {
		return where{}, usageError("%v", err)
	}
	return where{db: db, server: server, remote: remote}, nil
}

// open opens the chosen target. create lets a local one create the
// database (register, exec); run says the registrations are this host's
// own processes (exec's child), whose identity a daemon must be sent.
func (w where) open(ctx context.Context, create, run bool) (target.Target, error) {
	if w.remote {
		c, err := dialServer(w.server)
		if err != nil {
			return nil, err
		}
		var host *probe.Host
		if run {
			host = localHost()
		}
		return target.NewRemote(c, host), nil
	}
	st, err := openStore(ctx, w.db, create)
	if err != nil {
		return nil, err
	}
	return target.NewLocal(st, localHost()), nil
}

// findToken finds the daemon's bearer token as tokenfile.Find does, beside
// the database this command would otherwise use (WATCHDOG_DB, default
// ./watchdog.db).
func findToken(server string) (tok, where string, err error) {
	db := os.Getenv("WATCHDOG_DB")
	if db == "" {
		db = defaultDB
	}
	return tokenfile.Find(server, db)
}

// dialServer returns a client of the daemon at server with the bearer
// token findToken finds; a 401 names where it looked.
func dialServer(server string) (*client.Client, error) {
	tok, where, err := findToken(server)
	if err != nil {
		return nil, err
	}
	c := client.New(server, tok)
	c.UnauthorizedHint = where
	return c, nil
}

// explain turns a failed call into the one line the command prints. The
// API's own refusals already carry the write path's sentence (the same the
// local path prints) and pass unchanged, as does every local error; a
// transport failure is reworded to name the daemon's URL once, without
// the request's method and path, which say nothing the user can act on.
func (w where) explain(err error) error {
	var apiErr *client.Error
	if err == nil || !w.remote || errors.As(err, &apiErr) {
		return err
	}
	var ue *url.Error
	if errors.As(err, &ue) {
		if ue.Timeout() {
			return fmt.Errorf("daemon at %s did not answer in time: %w", w.server, ue.Err)
		}
		return fmt.Errorf("cannot reach the daemon at %s: %w", w.server, ue.Err)
	}
	return err
}
