package target

import (
	"errors"
	"fmt"
	"net/url"
	"strings"

	"watchdog/probe"
)

// Choice is where a writing command's --db and --server came from, for
// Remote to decide between them.
type Choice struct {
	Server string
	// DB is the database a local target opens.
	DB string
	// Host is this machine as the probe sees it: a local target's
	// identifier, and exec's child's identity for a daemon.
	Host *probe.Host
	// DBFlag and ServerFlag say the flag was given (not defaulted from
	// its environment variable); EnvDB says WATCHDOG_DB is set.
	DBFlag, ServerFlag, EnvDB bool
	// ConfigFlag says --config was given (status, attention, snooze and
	// dismiss): it names the daemon's database and settings on this host.
	ConfigFlag bool
	// RunbookURL is the config's alertmanager.runbook_url: a local
	// queue's items link their runbook sections as the daemon's do
	// ("" links the daemon's own /runbook).
	RunbookURL string
}

// Remote decides whether the command goes through the daemon (true) or
// opens the database (false). The rule is the one operators know from
// other tools: a flag beats an environment variable, and two sources of
// the same rank that disagree are refused rather than guessed between. So
// --db with --server is an error, --db wins over WATCHDOG_SERVER, --server
// wins over WATCHDOG_DB, and WATCHDOG_DB with WATCHDOG_SERVER (neither
// flag) is an error too: an agent whose environment says both would
// otherwise write to whichever one this code happened to prefer. --config
// names the daemon's local database as --db does, so it beats
// WATCHDOG_SERVER; with --server it is refused: the daemon judges with its
// own config, and one given here would be silently ignored. Every error is
// a mistake in the command line.
func (c Choice) Remote() (bool, error) {
	remote, err := c.remote()
	if err != nil || !remote || !c.ConfigFlag {
		return remote, err
	}
	if c.ServerFlag {
		return false, errors.New("--config reads a local database: with --server the daemon applies its own config (thresholds.failure_window and the rest)")
	}
	return false, nil
}

// remote is Remote's rule for --db and --server.
func (c Choice) remote() (bool, error) {
	if c.Server == "" {
		return false, nil
	}
	switch {
	case c.DBFlag && c.ServerFlag:
		return false, errors.New("--db and --server both given: use one (a local database, or a daemon's API)")
	case c.DBFlag:
		return false, nil
	case !c.ServerFlag && c.EnvDB:
		return false, errors.New("WATCHDOG_DB and WATCHDOG_SERVER are both set: unset one, or choose with --db or --server")
	}
	if err := checkServerURL(c.Server); err != nil {
		src := "--server"
		if !c.ServerFlag {
			src = "WATCHDOG_SERVER"
		}
		return false, fmt.Errorf("%s: %w", src, err)
	}
	return true, nil
}

// checkServerURL refuses what cannot be a daemon's base URL before any
// request, so a typo is a usage error and not a network one. A bare
// host:port is accepted, as client.New reads it as http://host:port.
func checkServerURL(server string) error {
	s := strings.TrimSpace(server)
	if !strings.Contains(s, "://") {
		s = "http://" + s
	}
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("%q is not a daemon URL like http://127.0.0.1:9715", server)
	}
	return nil
}

// Where names what Remote chooses, as a command shows its source: the
// daemon's URL or the database.
func (c Choice) Where() string {
	if remote, _ := c.Remote(); remote {
		return c.Server
	}
	return c.DB
}
