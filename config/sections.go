package config

import (
	"errors"
	"fmt"
)

// HTTP is the "http" section: the bounds of the HTTP server. Its timeouts
// are fixed (daemon's connection limits, ADR-0034); the cap is a key
// because what it may be depends on the host's file-descriptor limit.
type HTTP struct {
	// MaxConnections caps the requests other than /healthz, /readyz and
	// /metrics served at once; beyond it they are answered 503. The
	// daemon keeps MaxConnections plus a small reserve of connections
	// open at most (each one a file descriptor): connections still
	// waiting for their request headers are closed, oldest first, to make
	// room, so a flood of slow clients cannot keep the probes out.
	MaxConnections int `yaml:"max_connections"`
}

// Web is the "web" section: the TCP port's transport security.
type Web struct {
	// ConfigFile is an absolute path to a web configuration file in
	// prometheus/exporter-toolkit's format (tls_server_config,
	// basic_auth_users with bcrypt hashes, ...), which the toolkit reads
	// again for each connection and request: certificates and users
	// change without a restart. With TLS in it, the port speaks HTTPS
	// only. Empty: plain HTTP. The local socket is never affected.
	ConfigFile string `yaml:"config_file"`
}

// MaxHTTPConnections is the largest http.max_connections: Linux's default
// ceiling of open files per process (fs.nr_open), which no cap can pass.
const MaxHTTPConnections = 1 << 20

// Alertmanager is the "alertmanager" section (docs/alerting.md, "Push alerts to Alertmanager").
type Alertmanager struct {
	// URLs are the Alertmanager instances (http or https base URLs, such
	// as http://127.0.0.1:9093); each gets every alert, as Prometheus
	// sends to each. Empty turns pushing off.
	URLs []string `yaml:"urls"`
	// ResendEvery is how often the firing alerts are sent again; an
	// alert's endsAt is four of these ahead, so alerts resolve by
	// themselves when the daemon is gone.
	ResendEvery Duration `yaml:"resend_every"`
	// Timeout bounds one HTTP request to one Alertmanager.
	Timeout Duration `yaml:"timeout"`
	// RunbookURL, when set, is the base of each alert's runbook_url
	// annotation: "#<reason_code>" is appended. Empty leaves the
	// annotation out.
	RunbookURL string `yaml:"runbook_url"`
}

// Enabled reports whether any Alertmanager is configured.
func (a Alertmanager) Enabled() bool { return len(a.URLs) > 0 }

// Store is the "store" section.
type Store struct {
	// Driver is the storage backend: "sqlite" (embedded, the default) or
	// "postgres" (a server several daemons share).
	Driver string `yaml:"driver"`
	// DSN is the data source: for sqlite, the database file path; for
	// postgres, a postgres:// URL.
	DSN string `yaml:"dsn"`
}

// Thresholds is the "thresholds" section. Every value must be positive,
// IdleAfter < StalledAfter, SlowAfter < SlowUntil and
// HostDisconnectedAfter < HostLostAfter.
type Thresholds struct {
	// IdleAfter is the heartbeat age from which a running entity is idle.
	IdleAfter Duration `yaml:"idle_after"`
	// StalledAfter is the heartbeat age from which it is stalled.
	StalledAfter Duration `yaml:"stalled_after"`
	// SlowAfter is the run age from which an alive, fresh entity is slow.
	SlowAfter Duration `yaml:"slow_after"`
	// SlowUntil is the run age after which it is no longer reported slow.
	SlowUntil Duration `yaml:"slow_until"`
	// TerminalGrace is how long a process must have been dead before
	// enforce_terminal ends its entity, giving the owner time to record
	// its own end.
	TerminalGrace Duration `yaml:"terminal_grace"`
	// PhantomAfter is how long a dead or orphaned entity must have been
	// inactive before reap_phantoms ends it.
	PhantomAfter Duration `yaml:"phantom_after"`
	// MisfireGrace is how late a schedule's fire may be before it counts
	// as misfired.
	MisfireGrace Duration `yaml:"misfire_grace"`
	// FailureWindow is how long ended entities stay probed (stale locks)
	// and failed items stay in the attention queue.
	FailureWindow Duration `yaml:"failure_window"`
	// TriageRetention is how long the triage log (who snoozed or
	// dismissed what, ADR-0049) keeps a row: the vacuum job drops the
	// rows older than this.
	TriageRetention Duration `yaml:"triage_retention"`
	// HostDisconnectedAfter is how long a host's daemon may be silent
	// (no presence recorded in the shared store) before the leader reads
	// that host's open entities as disconnected.
	HostDisconnectedAfter Duration `yaml:"host_disconnected_after"`
	// HostLostAfter is how long before they read lost (critical); it must
	// exceed HostDisconnectedAfter. No other host ever ends them.
	HostLostAfter Duration `yaml:"host_lost_after"`
	// RequireHeartbeat are the entity types expected to heartbeat from
	// their start: one that has sent none ages from its start (idle, then
	// stalled). Any other type's entity with no heartbeat source (no
	// file, none posted yet) is judged on liveness alone.
	RequireHeartbeat []string `yaml:"require_heartbeat"`
}

// Jobs is the "jobs" section: one cron spec per scheduled job, in the syntax
// [cronspec.Parser] accepts (five fields, or a descriptor such as "@every 15s" or
// "@daily").
type Jobs struct {
	// Sweep probes every non-terminal entity of this host.
	Sweep string `yaml:"sweep"`
	// EnforceTerminal ends entities whose process died without a terminal
	// status.
	EnforceTerminal string `yaml:"enforce_terminal"`
	// ReapPhantoms ends long-dead entities and closes orphaned groups.
	ReapPhantoms string `yaml:"reap_phantoms"`
	// CheckSchedules marks schedule entities due or misfired.
	CheckSchedules string `yaml:"check_schedules"`
	// Vacuum drops expired snoozes and stale dismissals, and the triage
	// log's rows older than thresholds.triage_retention.
	Vacuum string `yaml:"vacuum"`
}

// Reaper is the "reaper" section.
type Reaper struct {
	// DryRun logs what the reaper would do and writes nothing.
	DryRun bool `yaml:"dry_run"`
	// MaxPerRun bounds the entities one job run may change; at least 1.
	MaxPerRun int `yaml:"max_per_run"`
	// KillOrphans lets the reaper signal orphaned processes (SIGTERM, then
	// SIGKILL after KillGrace).
	KillOrphans bool `yaml:"kill_orphans"`
	// KillGrace is the wait between SIGTERM and SIGKILL.
	KillGrace Duration `yaml:"kill_grace"`
	// KillUsers are the users (names or numeric uids) whose orphaned
	// processes kill_orphans may signal. Empty means every user but root:
	// a registration names any pid it likes, so the owner of registered
	// work is no safeguard, and root's processes are the host's own.
	KillUsers []string `yaml:"kill_users"`
	// KillLeftovers lets the reaper signal an entity's leftover processes
	// (run.health.leftover_processes) once the finding is LeftoverGrace
	// old: SIGTERM, then SIGKILL after KillGrace, with kill_orphans'
	// guards (kill_users, never pid 1, the daemon or its ancestors, the
	// identity re-checked before each signal).
	KillLeftovers bool `yaml:"kill_leftovers"`
	// LeftoverGrace is how long leftover processes may outlive their
	// entity's end or its process's death before kill_leftovers acts.
	LeftoverGrace Duration `yaml:"leftover_grace"`
}

// KillUIDs resolves KillUsers to uids; nil when the list is empty (every
// user but root).
func (r Reaper) KillUIDs() ([]int, error) {
	if len(r.KillUsers) == 0 {
		return nil, nil
	}
	var uids []int
	var errs []error
	for i, name := range r.KillUsers {
		uid, err := lookupUID(name)
		if err != nil {
			errs = append(errs, fmt.Errorf("reaper.kill_users[%d]: %w", i, err))
			continue
		}
		uids = append(uids, uid)
	}
	return uids, errors.Join(errs...)
}

// Log is the "log" section.
type Log struct {
	// Level is one of debug, info, warn, error.
	Level string `yaml:"level"`
	// Format is "json", "console", or empty for automatic: console when
	// stderr is a terminal, JSON otherwise (journald).
	Format string `yaml:"format"`
}
