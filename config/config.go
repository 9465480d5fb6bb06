// Package config loads, defaults and validates watchdog's YAML configuration.
//
// Every key is optional; a missing key keeps its default (see [Default]) and
// an unknown key is an error. Problems are reported one per line, each naming
// the key and the value and, where there is one, suggesting a fix:
//
//	thresholds.stalled_after: "five" is not a duration (try 1h)
//	line 3: unknown key "thresholds.idel_after" (did you mean "thresholds.idle_after"?)
package config

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// Config is the whole configuration file. The zero value is not useful: start
// from [Default], which is what [Load] and [Parse] decode onto.
type Config struct {
	// HostID names this host in the store. Empty means detect it:
	// /etc/machine-id, else the hostname.
	HostID string `yaml:"host_id"`
	// Store is where entities and transitions are kept.
	Store Store `yaml:"store"`
	// Listen is the host:port of the HTTP API and /metrics. A non-loopback
	// address cannot have auth "none".
	Listen string `yaml:"listen"`
	// ListenUnix is the path of the local socket serving the same API,
	// whose callers the kernel names by uid (SO_PEERCRED): no token, and
	// each caller acts for its own processes only (docs/security.md).
	// Empty means the default: watchdog.sock beside an SQLite database;
	// "none" turns it off (a PostgreSQL store has no "beside": set a
	// path).
	ListenUnix string `yaml:"listen_unix"`
	// AllowedHosts are the host names, besides localhost and IP
	// addresses, that HTTP requests may name in their Host header (the
	// API refuses any other: DNS rebinding). List the names Prometheus or
	// remote clients use to reach this daemon.
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
	// Alertmanager pushes the attention queue's critical and warning
	// items to Alertmanager; off without urls.
	Alertmanager Alertmanager `yaml:"alertmanager"`
	// HTTP bounds the HTTP server's connections (ADR-0034).
	HTTP HTTP `yaml:"http"`
	// Web is the TCP port's TLS and basic auth (docs/security.md).
	Web Web `yaml:"web"`
	// ProcessTree is how the daemon keeps each watched process's
	// descendants (ADR-0043, ADR-0045): ProcessTreeEvents, ProcessTreeWalk
	// or ProcessTreeOff.
	ProcessTree string `yaml:"process_tree"`
}

// The values of process_tree.
const (
	// ProcessTreeEvents: the kernel's process connector, filtered in the
	// kernel to the watched processes, where the daemon may open it (root
	// on the host); /proc walks where it may not.
	ProcessTreeEvents = "events"
	// ProcessTreeWalk: /proc walks at the sweep and at each death, never
	// the connector.
	ProcessTreeWalk = "walk"
	// ProcessTreeOff: no tree; leftovers only from a one-shot walk of a
	// live root at a look, and from a stored finding's processes.
	ProcessTreeOff = "off"
)

// ListenUnixNone turns the local socket off.
const ListenUnixNone = "none"

// SocketName is the default socket's name, beside an SQLite database.
const SocketName = "watchdog.sock"

// RuntimeSocketName is the default socket's name in systemd's
// RuntimeDirectory= (the shipped unit's /run/watchdog/api.sock).
const RuntimeSocketName = "api.sock"

// UnixSocket is the local socket's path: listen_unix; else api.sock in
// the unit's runtime directory (systemd's RUNTIME_DIRECTORY), else
// watchdog.sock beside an SQLite database; "" when off (or with no place
// for it).
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

// Default values of each section, as docs/reference/config.md and
// deploy/config.example.yaml list them. [Default] copies them.
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
	// DefaultReaper writes, bounded to 500 changes a run, and kills nothing
	// (kill_orphans and kill_leftovers off).
	DefaultReaper = Reaper{MaxPerRun: 500, KillGrace: Duration(10 * time.Second), KillUsers: []string{}, LeftoverGrace: Duration(30 * time.Second)}
	// DefaultLog logs at info, format chosen by whether stderr is a terminal.
	DefaultLog = Log{Level: "info"}
	// DefaultAlertmanager pushes nowhere; once urls are set, it re-sends
	// every minute (Prometheus's own resend delay) with a 10s timeout.
	DefaultAlertmanager = Alertmanager{URLs: []string{}, ResendEvery: Duration(time.Minute), Timeout: Duration(10 * time.Second)}
	// DefaultHTTP serves 1024 requests at once: far more than one host's
	// agents and a scraper need, and a bounded share of the process's
	// file descriptors, whose rest the pidfds and the store need.
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

// Load reads the YAML file at path and returns it as [Parse] does. An empty
// path means no file: the defaults. A read error names the path; the
// problems of a file's content do not, so the caller adds it.
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

// Parse decodes one YAML document onto the defaults, strictly (an unknown or
// repeated key is an error), then validates the result. Empty input, or input
// holding only comments or an empty document, yields the defaults, as does a
// key given no value.
//
// On error the Config is nil and the error holds every problem found, one per
// line (errors.Join): YAML that does not parse is yaml.v3's own error, alone;
// otherwise every key problem (unknown or repeated keys, wrong types, bad
// durations) in document order, then every validation problem (values and
// the rules between them; in key order).
func Parse(data []byte) (*Config, error) {
	c, err := decode(data)
	if err != nil {
		return nil, err
	}
	return c, nil
}

// Inspect reads the file at path like [Load], but returns the configuration
// even when it has problems: each key that decoded holds its value, each
// other key its default. check-config uses it to check what the file leads
// to (the token file, the store's directory) in the same run as the file
// itself. The Config is nil only when the file cannot be read or is not
// YAML.
func Inspect(path string) (*Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read config: %w", err)
	}
	return decode(data)
}
