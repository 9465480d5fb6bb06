// Package config loads, defaults and validates watchdog's YAML configuration.
//
// Every key is optional and defaults ([Default]); an unknown key is an
// error. Each problem names its key and, where possible, a fix.
package config

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// Config is the whole configuration file; start from [Default], which
// [Load] and [Parse] decode onto.
type Config struct {
	// HostID names this host in the store; empty: machine-id, else hostname.
	HostID string `yaml:"host_id"`
	// Store is where entities and transitions are kept.
	Store Store `yaml:"store"`
	// Listen is the host:port of the API and /metrics; auth "none" needs loopback.
	Listen string `yaml:"listen"`
	// ListenUnix is the local socket's path: no token, each caller acts as its
	// kernel-named uid (docs/security.md). "none" turns it off.
	ListenUnix string `yaml:"listen_unix"`
	// AllowedHosts are the Host header names accepted besides localhost and IPs.
	AllowedHosts []string `yaml:"allowed_hosts"`
	// Auth protects the mutating HTTP endpoints.
	Auth Auth `yaml:"auth"`
	// Thresholds drive probe classification and the reaper's patience.
	Thresholds Thresholds `yaml:"thresholds"`
	// Jobs holds the cron spec of each scheduled job.
	Jobs Jobs `yaml:"jobs"`
	// Reaper bounds and tames what the reaper jobs do.
	Reaper Reaper `yaml:"reaper"`
	// Log sets the logger's level and encoding.
	Log Log `yaml:"log"`
	// Alertmanager pushes critical and warning items; off without urls.
	Alertmanager Alertmanager `yaml:"alertmanager"`
	// HTTP bounds the HTTP server's connections (ADR-0034).
	HTTP HTTP `yaml:"http"`
	// Web is the TCP port's TLS and basic auth (docs/security.md).
	Web Web `yaml:"web"`
	// ProcessTree is how descendants are kept (ADR-0043, ADR-0045).
	ProcessTree string `yaml:"process_tree"`
}

// The values of process_tree.
const (
	// ProcessTreeEvents: the kernel-filtered process connector, else /proc walks.
	ProcessTreeEvents = "events"
	// ProcessTreeWalk: /proc walks at the sweep and at each death.
	ProcessTreeWalk = "walk"
	// ProcessTreeOff: no tree; leftovers only from a live root or a stored finding.
	ProcessTreeOff = "off"
)

// ListenUnixNone turns the local socket off.
const ListenUnixNone = "none"

// SocketName is the default socket's name, beside an SQLite database.
const SocketName = "watchdog.sock"

// RuntimeSocketName is the default socket's name in RuntimeDirectory=.
const RuntimeSocketName = "api.sock"

// UnixSocket is the local socket's path: listen_unix, else api.sock in
// RUNTIME_DIRECTORY, else watchdog.sock beside an SQLite database; "" when off.
func (c *Config) UnixSocket() string {
	switch {
	case c.ListenUnix == ListenUnixNone:
		return ""
	case c.ListenUnix != "":
		return c.ListenUnix
	case os.Getenv("RUNTIME_DIRECTORY") != "":
		dir, _, _ := strings.Cut(os.Getenv("RUNTIME_DIRECTORY"), ":")
		return filepath.Join(dir, RuntimeSocketName)
	case c.Store.Driver == "sqlite" || c.Store.Driver == "":
		return filepath.Join(filepath.Dir(c.Store.DSN), SocketName)
	}
	return ""
}

// DefaultListen is the default HTTP listen address.
const DefaultListen = "127.0.0.1:9715"

// Default values of each section (docs/reference/config.md).
var (
	// DefaultStore is an SQLite file in the working directory.
	DefaultStore = Store{Driver: "sqlite", DSN: "./watchdog.db"}
	// DefaultThresholds are the default thresholds.
	DefaultThresholds = Thresholds{
		IdleAfter:     Duration(10 * time.Minute),
		StalledAfter:  Duration(60 * time.Minute),
		SlowAfter:     Duration(60 * time.Minute),
		SlowUntil:     Duration(3 * time.Hour),
		TerminalGrace: Duration(30 * time.Second),
		PhantomAfter:  Duration(time.Hour),
		MisfireGrace:  Duration(5 * time.Minute),
		FailureWindow: Duration(24 * time.Hour),
		// 90 days: a quarter's triage, for a review or a dispute.
		TriageRetention: Duration(90 * 24 * time.Hour),

		HostDisconnectedAfter: Duration(time.Minute),
		HostLostAfter:         Duration(15 * time.Minute),
		RequireHeartbeat:      []string{},
	}
	// DefaultJobs are the default job schedules.
	DefaultJobs = Jobs{
		Sweep:           "@every 1m",
		EnforceTerminal: "@every 30s",
		ReapPhantoms:    "@every 5m",
		CheckSchedules:  "@every 1m",
		Vacuum:          "@daily",
	}
	// DefaultReaper writes at most 500 changes a run and kills nothing.
	DefaultReaper = Reaper{MaxPerRun: 500, KillGrace: Duration(10 * time.Second), KillUsers: []string{}, LeftoverGrace: Duration(30 * time.Second)}
	// DefaultLog logs at info, format chosen by whether stderr is a terminal.
	DefaultLog = Log{Level: "info"}
	// DefaultAlertmanager pushes nowhere; with urls it re-sends every minute.
	DefaultAlertmanager = Alertmanager{URLs: []string{}, ResendEvery: Duration(time.Minute), Timeout: Duration(10 * time.Second)}
	// DefaultHTTP serves 1024 requests at once: the rest of the fds are for
	// pidfds and the store.
	DefaultHTTP = HTTP{MaxConnections: 1024}
)

// Default returns a new Config holding every default value. It validates.
func Default() *Config {
	return &Config{
		Store:        DefaultStore,
		Listen:       DefaultListen,
		AllowedHosts: []string{},
		Auth:         Auth{Tokens: []Token{}},
		Thresholds:   DefaultThresholds,
		Jobs:         DefaultJobs,
		Reaper:       DefaultReaper,
		Log:          DefaultLog,
		Alertmanager: DefaultAlertmanager,
		HTTP:         DefaultHTTP,
		ProcessTree:  ProcessTreeEvents,
	}
}

// Load reads the YAML file at path as [Parse] does; an empty path means
// the defaults. Content problems do not name the path: the caller adds it.
func Load(path string) (*Config, error) {
	if path == "" {
		c := Default()
		if err := c.Validate(); err != nil {
			return nil, err
		}
		return c, nil
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read config: %w", err)
	}
	return Parse(data)
}

// Parse decodes one YAML document onto the defaults, strictly, then
// validates it. On error the Config is nil and the error joins every problem.
func Parse(data []byte) (*Config, error) {
	c, err := decode(data)
	if err != nil {
		return nil, err
	}
	return c, nil
}

// Inspect is [Load] that returns the configuration despite problems, so
// check-config can check what it leads to; nil only when unreadable or not YAML.
func Inspect(path string) (*Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read config: %w", err)
	}
	return decode(data)
}
