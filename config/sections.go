package config

import (
	"errors"
	"fmt"
)

// HTTP is the "http" section. Its timeouts are fixed (ADR-0034); the cap
// is a key because its bound depends on the host's fd limit.
type HTTP struct {
	// MaxConnections caps the requests served at once besides probes and /metrics.
	MaxConnections int `yaml:"max_connections"`
}

// Web is the "web" section: the TCP port's transport security.
type Web struct {
	// ConfigFile is an absolute path to an exporter-toolkit web config (TLS, basic auth).
	ConfigFile string `yaml:"config_file"`
}

// MaxHTTPConnections is the largest http.max_connections: Linux's open
// files ceiling (fs.nr_open).
const MaxHTTPConnections = 1 << 20

// Alertmanager is the "alertmanager" section (docs/alerting.md).
type Alertmanager struct {
	// URLs are the Alertmanager base URLs, each sent every alert; empty: off.
	URLs []string `yaml:"urls"`
	// ResendEvery is how often firing alerts are resent; endsAt is four ahead,
	// so alerts resolve by themselves when the daemon is gone.
	ResendEvery Duration `yaml:"resend_every"`
	// Timeout bounds one HTTP request to one Alertmanager.
	Timeout Duration `yaml:"timeout"`
	// RunbookURL, when set, is the base of each alert's runbook_url.
	RunbookURL string `yaml:"runbook_url"`
}

// Enabled reports whether any Alertmanager is configured.
func (a Alertmanager) Enabled() bool { return len(a.URLs) > 0 }

// Store is the "store" section.
type Store struct {
	// Driver is the storage backend: "sqlite" or "postgres".
	Driver string `yaml:"driver"`
	// DSN is the SQLite file path or a postgres:// URL.
	DSN string `yaml:"dsn"`
}

// Thresholds is the "thresholds" section (docs/reference/config.md).
type Thresholds struct {
	// IdleAfter is the heartbeat age from which a running entity is idle.
	IdleAfter Duration `yaml:"idle_after"`
	// StalledAfter is the heartbeat age from which it is stalled.
	StalledAfter Duration `yaml:"stalled_after"`
	// SlowAfter is the run age from which an alive, fresh entity is slow.
	SlowAfter Duration `yaml:"slow_after"`
	// SlowUntil is the run age after which it is no longer reported slow.
	SlowUntil Duration `yaml:"slow_until"`
	// TerminalGrace is how long a process must be dead before its entity ends.
	TerminalGrace Duration `yaml:"terminal_grace"`
	// PhantomAfter is how long a dead or orphaned entity idles before reaping.
	PhantomAfter Duration `yaml:"phantom_after"`
	// MisfireGrace is how late a schedule's fire may be before it is misfired.
	MisfireGrace Duration `yaml:"misfire_grace"`
	// FailureWindow is how long ended entities stay probed and in the queue.
	FailureWindow Duration `yaml:"failure_window"`
	// TriageRetention is how long the triage log keeps a row (ADR-0049).
	TriageRetention Duration `yaml:"triage_retention"`
	// HostDisconnectedAfter is how long a host may be silent before disconnected.
	HostDisconnectedAfter Duration `yaml:"host_disconnected_after"`
	// HostLostAfter is when they read lost; no other host ever ends them.
	HostLostAfter Duration `yaml:"host_lost_after"`
	// RequireHeartbeat are the types expected to heartbeat from their start.
	RequireHeartbeat []string `yaml:"require_heartbeat"`
}

// Jobs is the "jobs" section: one cron spec per job ([cronspec.Parser]).
type Jobs struct {
	// Sweep probes every non-terminal entity of this host.
	Sweep string `yaml:"sweep"`
	// EnforceTerminal ends entities whose process died without an end.
	EnforceTerminal string `yaml:"enforce_terminal"`
	// ReapPhantoms ends long-dead entities and closes orphaned groups.
	ReapPhantoms string `yaml:"reap_phantoms"`
	// CheckSchedules marks schedule entities due or misfired.
	CheckSchedules string `yaml:"check_schedules"`
	// Vacuum drops expired snoozes, stale dismissals and old triage rows.
	Vacuum string `yaml:"vacuum"`
}

// Reaper is the "reaper" section.
type Reaper struct {
	// DryRun logs what the reaper would do and writes nothing.
	DryRun bool `yaml:"dry_run"`
	// MaxPerRun bounds the entities one job run may change; at least 1.
	MaxPerRun int `yaml:"max_per_run"`
	// KillOrphans lets the reaper signal orphaned processes.
	KillOrphans bool `yaml:"kill_orphans"`
	// KillGrace is the wait between SIGTERM and SIGKILL.
	KillGrace Duration `yaml:"kill_grace"`
	// KillUsers are the users whose orphans may be signalled. Empty means all
	// but root: a registration names any pid, so its owner is no safeguard.
	KillUsers []string `yaml:"kill_users"`
	// KillLeftovers lets the reaper signal leftover processes (ADR-0044).
	KillLeftovers bool `yaml:"kill_leftovers"`
	// LeftoverGrace is how long leftovers may outlive their entity's end.
	LeftoverGrace Duration `yaml:"leftover_grace"`
}

// KillUIDs resolves KillUsers to uids; nil when the list is empty.
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
	// Format is "json", "console", or empty: console on a terminal.
	Format string `yaml:"format"`
}
