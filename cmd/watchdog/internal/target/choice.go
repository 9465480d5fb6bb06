package target

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"watchdog/config"
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
	// Socket is the daemon's local socket this command talks to when
	// neither a database nor a server is named (FindSocket); "" for none.
	Socket string
	// RunbookURL is the config's alertmanager.runbook_url: a local
	// queue's items link their runbook sections as the daemon's do
	// ("" links the daemon's own /runbook).
	RunbookURL string
	// RequireHeartbeat are the types expected to heartbeat from their
	// start (thresholds.require_heartbeat, canonical): a local read says
	// hangs are not detected only of the others (wire.Heartbeats).
	RequireHeartbeat []string
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

// remote is Remote's rule for --db and --server, and the socket: with
// neither named (flag or environment), a daemon's local socket is used
// when one answers.
func (c Choice) remote() (bool, error) {
	if c.viaSocket() {
		return true, nil
	}
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

// viaSocket says the command goes to the daemon's local socket: one was
// found, and nothing names a database, a server or a config.
func (c Choice) viaSocket() bool {
	return c.Socket != "" && c.Server == "" && !c.DBFlag && !c.EnvDB && !c.ConfigFlag
}

// Where names what Remote chooses, as a command shows its source: the
// daemon's URL, its socket, or the database.
func (c Choice) Where() string {
	if c.viaSocket() {
		return "unix:" + c.Socket
	}
	if remote, _ := c.Remote(); remote {
		return c.Server
	}
	return c.DB
}

// trustedSocket says whether p is a socket a daemon of this host made:
// owned by root, by this user, or by its directory's owner, in a
// directory no other user may write to (a socket planted in /tmp by
// another user is not a daemon's: a command would hand it its writes).
func trustedSocket(p string) bool {
	fi, err := os.Stat(p)
	if err != nil || fi.Mode()&os.ModeSocket == 0 {
		return false
	}
	di, err := os.Stat(filepath.Dir(p))
	if err != nil || di.Mode().Perm()&0o002 != 0 {
		return false
	}
	so, sok := fi.Sys().(*syscall.Stat_t)
	do, dok := di.Sys().(*syscall.Stat_t)
	if !sok || !dok {
		return false
	}
	return so.Uid == 0 || int(so.Uid) == os.Getuid() || so.Uid == do.Uid
}

// EnvSocket names the daemon's local socket for the CLI.
const EnvSocket = "WATCHDOG_SOCKET"

// SystemSocket is the packaged daemon's socket (the unit's listen_unix).
const SystemSocket = "/run/watchdog/api.sock"

// FindSocket is the daemon's local socket a command on this host talks
// to by default: WATCHDOG_SOCKET, else watchdog.sock beside db (a daemon
// on its defaults), else SystemSocket; the first that a daemon answers
// on, "" when none does (the command then opens the database).
func FindSocket(db string) string {
	cands := []string{filepath.Join(filepath.Dir(db), config.SocketName), SystemSocket}
	if p := os.Getenv(EnvSocket); p != "" {
		cands = []string{p}
	}
	for _, p := range cands {
		if !trustedSocket(p) {
			continue
		}
		c, err := net.DialTimeout("unix", p, time.Second)
		if err != nil {
			continue
		}
		c.Close()
		return p
	}
	return ""
}
