package target

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"strings"

	"watchdog/cmd/watchdog/internal/client"
	"watchdog/live"
	"watchdog/probe"
	"watchdog/reaper"
	"watchdog/store"
	_ "watchdog/store/postgres" // registers the postgres driver: --db postgres://…
	"watchdog/store/sqlite"     // registers the sqlite driver: --db path
	"watchdog/tokenfile"
)

// DefaultDB is the database a command uses without --db or WATCHDOG_DB,
// as `watchdog serve` does with no config.
const DefaultDB = "./watchdog.db"

// OpenStore opens the database at path: an SQLite file, or PostgreSQL for
// a postgres:// URL. Without create a missing SQLite file is refused: a
// mistyped --db must say so, not report an empty host.
func OpenStore(ctx context.Context, path string, create bool) (store.Backend, error) {
	// Writes keep the rows' derived columns fresh, as the daemon's do (ADR-0058).
	store.SetDerivation(live.Columns)
	if store.IsPostgresDSN(path) {
		return store.Open(ctx, store.DriverPostgres, path)
	}
	if !create && !strings.HasPrefix(path, "file:") {
		if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("no database at %s (set --db or WATCHDOG_DB)", path)
		}
	}
	return store.Open(ctx, store.DriverSQLite, path)
}

// findToken finds the daemon's bearer token as tokenfile.Find does, beside
// the database a command would otherwise use.
func findToken(server string) (tok, where string, err error) {
	db := os.Getenv("WATCHDOG_DB")
	if db == "" {
		db = DefaultDB
	}
	return tokenfile.Find(server, db)
}

// Dial returns a client of the daemon at server with the bearer token
// findToken finds; a 401 names where it looked.
func Dial(server string) (*client.Client, error) {
	tok, where, err := findToken(server)
	if err != nil {
		return nil, err
	}
	c := client.New(server, tok)
	c.UnauthorizedHint = where
	return c, nil
}

// Open opens the target Remote chooses. create lets a local one create the
// database; run says the registrations are this host's own processes,
// whose identity a daemon must be sent.
func (c Choice) Open(ctx context.Context, create, run bool) (Target, error) {
	remote, err := c.Remote()
	if err != nil {
		return nil, err
	}
	if remote {
		var cl *client.Client
		if c.viaSocket() {
			cl = client.NewUnix(c.Socket)
		} else if cl, err = Dial(c.Server); err != nil {
			return nil, err
		}
		var host *probe.Host
		if run {
			host = c.Host
		}
		return NewRemote(cl, host), nil
	}
	st, err := OpenStore(ctx, c.DB, create)
	if err != nil {
		return nil, err
	}
	l := NewLocal(st, c.Host)
	l.db = c.DB
	if c.Host != nil {
		// The daemon serving this file is no entity's (docs/security.md).
		l.w.PIDs = reaper.PIDGuard{Host: c.Host, Daemon: sqlite.DaemonPID(c.DB, c.Host.HostID())}
	}
	l.runbook, l.requireHB = c.RunbookURL, c.RequireHeartbeat
	return l, nil
}

// Explain turns a failed call into the one line a command prints: API
// refusals and local errors pass unchanged; a transport failure names the
// daemon once, without the request's method and path.
func (c Choice) Explain(err error) error {
	var apiErr *client.Error
	if remote, _ := c.Remote(); err == nil || !remote || errors.As(err, &apiErr) {
		return err
	}
	var ue *url.Error
	if errors.As(err, &ue) {
		at := c.Server
		if c.viaSocket() {
			at = "unix:" + c.Socket
		}
		if ue.Timeout() {
			return fmt.Errorf("daemon at %s did not answer in time: %w", at, ue.Err)
		}
		return fmt.Errorf("cannot reach the daemon at %s: %w", at, ue.Err)
	}
	return err
}
