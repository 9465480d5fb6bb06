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
	// Host is this machine as the probe sees it.
	Host *probe.Host
	// DBFlag and ServerFlag say the flag was given; EnvDB says WATCHDOG_DB is set.
	DBFlag, ServerFlag, EnvDB bool
	// ConfigFlag says --config was given: it names the daemon's database and settings.
	ConfigFlag bool
	// Socket is the daemon's local socket used when nothing else is named ("": none).
	Socket string
	// RunbookURL is alertmanager.runbook_url, for a local queue's runbook links.
	RunbookURL string
	// RequireHeartbeat are thresholds.require_heartbeat's types, canonical.
	RequireHeartbeat []string
}

// Remote decides whether the command goes through the daemon (true) or
// opens the database (false): a flag beats an environment variable, and
// two sources of one rank that disagree are refused, never guessed
// between (docs/reference/cli.md). --config ranks as --db and is refused
// with --server, whose daemon would silently ignore it.
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

// remote is Remote's rule for --db, --server and the local socket.
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

// checkServerURL refuses what cannot be a daemon's base URL, so a typo is
// a usage error, not a network one; a bare host:port is accepted.
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

// Where names what Remote chooses, as a command shows its source.
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
// owned by root, this user or its directory's owner, in a directory no
// other user may write (a socket planted in /tmp would get our writes).
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

// FindSocket is the daemon's local socket a command talks to by default:
// WATCHDOG_SOCKET, else watchdog.sock beside db, else SystemSocket; the
// first a daemon answers on, "" when none does.
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
