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
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/user"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"watchdog/internal/cronspec"
	"watchdog/transitions"
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

func (w Web) validate() []error {
	if w.ConfigFile != "" && !filepath.IsAbs(w.ConfigFile) {
		return []error{fmt.Errorf("web.config_file: %q must be an absolute path", w.ConfigFile)}
	}
	return nil
}

// MaxHTTPConnections is the largest http.max_connections: Linux's default
// ceiling of open files per process (fs.nr_open), which no cap can pass.
const MaxHTTPConnections = 1 << 20

// Alertmanager is the "alertmanager" section (README, "Push alerts to Alertmanager").
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

// Auth is the "auth" section. Besides a mapping, YAML may give it as the
// scalar `auth: none` (the same as `auth: {mode: none}`) or `auth: token`.
type Auth struct {
	// Mode is AuthToken (also the meaning of empty, the default) or
	// AuthNone. With a token every mutating endpoint needs it; AuthNone
	// turns that off and is refused on a non-loopback listen address.
	Mode string `yaml:"mode"`
	// TokenFile holds the bearer token. Empty means the daemon's own: it
	// creates watchdog.token beside the database (mode 0600) and reuses it
	// across restarts. Must be empty with AuthNone.
	TokenFile string `yaml:"token_file"`
	// Tokens are scoped bearer tokens, each read from its own file (and
	// re-read on SIGHUP): what each may do and for which uids. The
	// token_file token (or the daemon's own) stays, with scope admin.
	Tokens []Token `yaml:"tokens"`
	// PublicReads opens the reads (entities, lists, the queue, the page)
	// to callers with no token. Off by default: a read shows what the
	// daemon saw of processes and files. /metrics, /healthz and /readyz
	// are always open.
	PublicReads bool `yaml:"public_reads"`
}

// Token is one scoped bearer token (auth.tokens).
type Token struct {
	// Name is what the audit rows say of its writes.
	Name string `yaml:"name"`
	// File holds the token (one line, as tokenfile reads it).
	File string `yaml:"file"`
	// Scopes are what it may do: read, report (register, heartbeat,
	// transition), triage (snooze, dismiss), admin (all of these, and
	// the admin actor).
	Scopes []string `yaml:"scopes"`
	// Users are the users (names or numeric uids) whose processes it may
	// register and act on. Empty: any pid, but no uid is proven, so the
	// reaper never signals what it registered.
	Users []string `yaml:"uids"`
}

// The scopes of a token.
const (
	ScopeRead   = "read"
	ScopeReport = "report"
	ScopeTriage = "triage"
	ScopeAdmin  = "admin"
)

// Scopes lists every scope.
var Scopes = []string{ScopeRead, ScopeReport, ScopeTriage, ScopeAdmin}

// UIDs resolves Users to uids.
func (t Token) UIDs() ([]int, error) {
	var uids []int
	var errs []error
	for i, name := range t.Users {
		uid, err := lookupUID(name)
		if err != nil {
			errs = append(errs, fmt.Errorf("uids[%d]: %w", i, err))
			continue
		}
		uids = append(uids, uid)
	}
	return uids, errors.Join(errs...)
}

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

// The values of auth.mode.
const (
	// AuthToken requires a bearer token on every mutating request.
	AuthToken = "token"
	// AuthNone lets any local process write; loopback listen only.
	AuthNone = "none"
)

// None reports whether auth is explicitly off.
func (a Auth) None() bool { return a.Mode == AuthNone }

// decodeScalar reads the scalar forms `auth: none` and `auth: token`; the
// mapping form is decoded like any section.
func (a *Auth) decodeScalar(n *yaml.Node) error {
	if n.Kind == yaml.ScalarNode && (n.Value == AuthNone || n.Value == AuthToken) {
		a.Mode = n.Value
		return nil
	}
	return fmt.Errorf("%s is not a mapping, none or token", describe(n))
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

// lookupUID turns a user name or a numeric uid into a uid.
func lookupUID(name string) (int, error) {
	name = strings.TrimSpace(name)
	if name == "" {
		return 0, errors.New("empty user name")
	}
	if n, err := strconv.ParseUint(name, 10, 31); err == nil {
		return int(n), nil
	}
	u, err := user.Lookup(name)
	if err != nil {
		return 0, fmt.Errorf("%q is not a user on this host (a name from /etc/passwd or a numeric uid)", name)
	}
	uid, err := strconv.Atoi(u.Uid)
	if err != nil {
		return 0, fmt.Errorf("user %q has a non-numeric uid %q", name, u.Uid)
	}
	return uid, nil
}

// Log is the "log" section.
type Log struct {
	// Level is one of debug, info, warn, error.
	Level string `yaml:"level"`
	// Format is "json", "console", or empty for automatic: console when
	// stderr is a terminal, JSON otherwise (journald).
	Format string `yaml:"format"`
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

// Validate checks every value and the rules between them, section by section.
// It returns nil, or every problem found, one per line.
func (c *Config) Validate() error {
	var errs []error
	errs = append(errs, c.Store.validate()...)
	errs = append(errs, c.validateStoreAuth()...)
	errs = append(errs, c.validateListen()...)
	errs = append(errs, c.validateListenUnix()...)
	errs = append(errs, c.validateAllowedHosts()...)
	errs = append(errs, c.Auth.validate()...)
	errs = append(errs, c.Thresholds.validate()...)
	errs = append(errs, c.Jobs.validate()...)
	errs = append(errs, c.Reaper.validate()...)
	errs = append(errs, c.Log.validate()...)
	errs = append(errs, c.Alertmanager.validate()...)
	errs = append(errs, c.HTTP.validate()...)
	errs = append(errs, c.Web.validate()...)
	switch c.ProcessTree {
	case ProcessTreeEvents, ProcessTreeWalk, ProcessTreeOff:
	default:
		errs = append(errs, fmt.Errorf("process_tree: %q is not one of events, walk, off", c.ProcessTree))
	}
	return errors.Join(errs...)
}

func (s Store) validate() []error {
	var errs []error
	url := isPostgresURL(s.DSN)
	switch s.Driver {
	case "sqlite":
		if url {
			errs = append(errs, errors.New("store.dsn: a postgres:// URL needs store.driver: postgres"))
		}
	case "postgres":
		if s.DSN != "" && !url {
			errs = append(errs, errors.New("store.dsn: with store.driver: postgres, must be a postgres:// (or postgresql://) URL"))
		}
	default:
		errs = append(errs, fmt.Errorf("store.driver: %q is not supported (sqlite or postgres)", s.Driver))
	}
	if s.DSN == "" {
		errs = append(errs, errors.New("store.dsn: must not be empty"))
	}
	return errs
}

// isPostgresURL reports a postgres:// or postgresql:// URL.
func isPostgresURL(dsn string) bool {
	l := strings.ToLower(strings.TrimSpace(dsn))
	return strings.HasPrefix(l, "postgres://") || strings.HasPrefix(l, "postgresql://")
}

// validateStoreAuth: the daemon's own token lives beside an SQLite file;
// a server database has no "beside", so postgres needs a token file or
// auth: none.
func (c *Config) validateStoreAuth() []error {
	if c.Store.Driver == "postgres" && !c.Auth.None() && c.Auth.TokenFile == "" {
		return []error{errors.New("auth.token_file: required with store.driver: postgres (the daemon's own token is kept beside an SQLite file; a server has no such place), or auth: none on loopback")}
	}
	return nil
}

// validateListen checks the address and the auth it may be served with.
func (c *Config) validateListen() []error {
	if err := CheckListen(c.Listen, c.Auth.None()); err != nil {
		return []error{err}
	}
	return nil
}

// CheckListen refuses a listen address that is not host:port, and a
// non-loopback one with auth: none (docs/reference/http-api.md, Authentication): every mutating endpoint would
// be open to the network. Validate applies it, and the daemon again before
// it listens, since it may be handed a Config that was never validated.
func CheckListen(listen string, authNone bool) error {
	host, port, err := net.SplitHostPort(listen)
	if err != nil || port == "" {
		return fmt.Errorf("listen: %q is not host:port", listen)
	}
	if _, err := strconv.ParseUint(port, 10, 16); err != nil {
		return fmt.Errorf("listen: %q is not host:port (the port must be a number from 0 to 65535)", listen)
	}
	if authNone && !IsLoopback(host) {
		return fmt.Errorf("auth: none is refused with listen %q, not a loopback address: anyone who can reach it could write (remove auth: none, and the daemon creates a token or reads auth.token_file)", listen)
	}
	return nil
}

func (a Auth) validate() []error {
	switch a.Mode {
	case "", AuthToken:
	case AuthNone:
		if a.TokenFile != "" {
			return []error{fmt.Errorf("auth.token_file: %q is set but auth.mode is none; remove one of them", a.TokenFile)}
		}
	default:
		return []error{fmt.Errorf("auth.mode: %q is not one of token, none", a.Mode)}
	}
	var errs []error
	names := map[string]bool{}
	for i, t := range a.Tokens {
		at := fmt.Sprintf("auth.tokens[%d]", i)
		switch {
		case a.None():
			errs = append(errs, fmt.Errorf("%s: tokens are set but auth.mode is none; remove one of them", at))
		case !reTokenName.MatchString(t.Name):
			errs = append(errs, fmt.Errorf("%s.name: %q must be 1-64 letters, digits and . _ - (the audit rows name it)", at, t.Name))
		case names[t.Name]:
			errs = append(errs, fmt.Errorf("%s.name: %q is given twice", at, t.Name))
		}
		names[t.Name] = true
		if t.File == "" || !filepath.IsAbs(t.File) {
			errs = append(errs, fmt.Errorf("%s.file: %q must be an absolute path", at, t.File))
		}
		if len(t.Scopes) == 0 {
			errs = append(errs, fmt.Errorf("%s.scopes: give at least one of %s", at, strings.Join(Scopes, ", ")))
		}
		for j, sc := range t.Scopes {
			if !slices.Contains(Scopes, sc) {
				errs = append(errs, fmt.Errorf("%s.scopes[%d]: %q is not one of %s", at, j, sc, strings.Join(Scopes, ", ")))
			}
		}
		if _, err := t.UIDs(); err != nil {
			errs = append(errs, fmt.Errorf("%s.%w", at, err))
		}
	}
	return errs
}

var reTokenName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`)

// validateListenUnix wants an absolute socket path, or none.
func (c *Config) validateListenUnix() []error {
	p := c.ListenUnix
	if p == "" || p == ListenUnixNone {
		return nil
	}
	if !filepath.IsAbs(p) {
		return []error{fmt.Errorf("listen_unix: %q must be an absolute path (or none)", p)}
	}
	if len(p) > 107 {
		return []error{fmt.Errorf("listen_unix: %q is longer than a socket path may be (107 bytes)", p)}
	}
	return nil
}

// reHostName is a DNS name as a Host header carries it: letters, digits,
// hyphens and dots (underscores too, which some internal names use).
var reHostName = regexp.MustCompile(`^[A-Za-z0-9_]([A-Za-z0-9_-]*[A-Za-z0-9_])?(\.[A-Za-z0-9_]([A-Za-z0-9_-]*[A-Za-z0-9_])?)*\.?$`)

// validateAllowedHosts wants bare host names: no scheme, port or path, since
// the API compares them with the Host header's name.
func (c *Config) validateAllowedHosts() []error {
	var errs []error
	for i, h := range c.AllowedHosts {
		if !reHostName.MatchString(h) || len(h) > 253 {
			errs = append(errs, fmt.Errorf("allowed_hosts[%d]: %q is not a host name (give the bare name, e.g. watchdog.example.org, without scheme, port or path)", i, h))
		}
	}
	return errs
}

// IsLoopback reports whether host is a loopback IP or "localhost". An
// empty host (all interfaces) and any other name are not, since a name may
// resolve anywhere.
func IsLoopback(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

func (t Thresholds) validate() []error {
	d := DefaultThresholds
	errs := positive("thresholds", []namedDuration{
		{"idle_after", t.IdleAfter, d.IdleAfter},
		{"stalled_after", t.StalledAfter, d.StalledAfter},
		{"slow_after", t.SlowAfter, d.SlowAfter},
		{"slow_until", t.SlowUntil, d.SlowUntil},
		{"terminal_grace", t.TerminalGrace, d.TerminalGrace},
		{"phantom_after", t.PhantomAfter, d.PhantomAfter},
		{"misfire_grace", t.MisfireGrace, d.MisfireGrace},
		{"failure_window", t.FailureWindow, d.FailureWindow},
		{"triage_retention", t.TriageRetention, d.TriageRetention},
		{"host_disconnected_after", t.HostDisconnectedAfter, d.HostDisconnectedAfter},
		{"host_lost_after", t.HostLostAfter, d.HostLostAfter},
	})
	if len(errs) > 0 {
		return errs // ordering is moot until every value is positive
	}
	if t.IdleAfter >= t.StalledAfter {
		errs = append(errs, fmt.Errorf("thresholds: idle_after (%s) must be less than stalled_after (%s)", t.IdleAfter, t.StalledAfter))
	}
	if t.SlowAfter >= t.SlowUntil {
		errs = append(errs, fmt.Errorf("thresholds: slow_after (%s) must be less than slow_until (%s)", t.SlowAfter, t.SlowUntil))
	}
	if t.HostDisconnectedAfter >= t.HostLostAfter {
		errs = append(errs, fmt.Errorf("thresholds: host_disconnected_after (%s) must be less than host_lost_after (%s)", t.HostDisconnectedAfter, t.HostLostAfter))
	}
	for _, typ := range t.RequireHeartbeat {
		if _, ok := transitions.CanonicalType(typ); !ok {
			errs = append(errs, fmt.Errorf("thresholds: require_heartbeat: %q is not an entity type (known: %s)", typ, strings.Join(transitions.Types(), ", ")))
		}
	}
	return errs
}

func (j Jobs) validate() []error {
	var errs []error
	for _, job := range []struct{ key, spec string }{
		{"sweep", j.Sweep},
		{"enforce_terminal", j.EnforceTerminal},
		{"reap_phantoms", j.ReapPhantoms},
		{"check_schedules", j.CheckSchedules},
		{"vacuum", j.Vacuum},
	} {
		if _, err := cronspec.Parser.Parse(job.spec); err != nil {
			errs = append(errs, fmt.Errorf("jobs.%s: %q is not a cron spec: %w", job.key, job.spec, err))
		}
	}
	return errs
}

func (r Reaper) validate() []error {
	var errs []error
	if r.MaxPerRun < 1 {
		errs = append(errs, errors.New("reaper.max_per_run: must be at least 1"))
	}
	errs = append(errs, positive("reaper", []namedDuration{{"kill_grace", r.KillGrace, DefaultReaper.KillGrace}, {"leftover_grace", r.LeftoverGrace, DefaultReaper.LeftoverGrace}})...)
	if _, err := r.KillUIDs(); err != nil {
		errs = append(errs, err)
	}
	return errs
}

func (l Log) validate() []error {
	var errs []error
	switch l.Level {
	case "debug", "info", "warn", "error":
	default:
		errs = append(errs, fmt.Errorf("log.level: %q is not one of debug, info, warn, error", l.Level))
	}
	switch l.Format {
	case "", "json", "console":
	default:
		errs = append(errs, fmt.Errorf("log.format: %q is not one of json, console (or empty to choose by terminal)", l.Format))
	}
	return errs
}

func (a Alertmanager) validate() []error {
	var errs []error
	for i, raw := range a.URLs {
		if err := checkHTTPURL(raw); err != nil {
			errs = append(errs, fmt.Errorf("alertmanager.urls[%d]: %q %w", i, raw, err))
		}
	}
	if a.RunbookURL != "" {
		if err := checkHTTPURL(a.RunbookURL); err != nil {
			errs = append(errs, fmt.Errorf("alertmanager.runbook_url: %q %w", a.RunbookURL, err))
		}
	}
	d := DefaultAlertmanager
	return append(errs, positive("alertmanager", []namedDuration{
		{"resend_every", a.ResendEvery, d.ResendEvery},
		{"timeout", a.Timeout, d.Timeout},
	})...)
}

func (h HTTP) validate() []error {
	if h.MaxConnections < 1 || h.MaxConnections > MaxHTTPConnections {
		return []error{fmt.Errorf("http.max_connections: %d must be between 1 and %d", h.MaxConnections, MaxHTTPConnections)}
	}
	return nil
}

// checkHTTPURL wants an absolute http or https URL with a host; the error
// completes a sentence that starts with the quoted value.
func checkHTTPURL(raw string) error {
	u, err := url.Parse(raw)
	switch {
	case err != nil:
		return errors.New("is not a URL (try http://127.0.0.1:9093)")
	case u.Scheme != "http" && u.Scheme != "https":
		return errors.New("is not an http or https URL (try http://127.0.0.1:9093)")
	case u.Host == "":
		return errors.New("has no host (try http://127.0.0.1:9093)")
	}
	return nil
}

type namedDuration struct {
	key      string
	value    Duration
	fallback Duration // suggested instead of a non-positive value
}

func positive(section string, ds []namedDuration) []error {
	var errs []error
	for _, d := range ds {
		if d.value <= 0 {
			errs = append(errs, fmt.Errorf("%s.%s: %s must be positive (try %s)", section, d.key, d.value, d.fallback))
		}
	}
	return errs
}

// Duration is a time.Duration written in YAML as a Go duration string such
// as "30s", "10m" or "24h" (no days: "1d" is an error suggesting "24h").
// Convert with time.Duration(d).
type Duration time.Duration

// String formats d like time.Duration without its zero units: "1h", "1h30m",
// "10s", "1.5s".
func (d Duration) String() string {
	s := time.Duration(d).String()
	if strings.HasSuffix(s, "m0s") {
		s = s[:len(s)-2]
	}
	if strings.HasSuffix(s, "h0m") {
		s = s[:len(s)-2]
	}
	return s
}

// MarshalYAML writes d as its String.
func (d Duration) MarshalYAML() (any, error) {
	return d.String(), nil
}

// UnmarshalYAML parses a duration string. A bad value is reported as a
// *yaml.TypeError (so that yaml.v3 goes on and collects every problem)
// carrying the value's position.
func (d *Duration) UnmarshalYAML(n *yaml.Node) error {
	if err := d.decodeScalar(n); err != nil {
		return &yaml.TypeError{Errors: []string{fmt.Sprintf("line %d: column %d: %v", n.Line, n.Column, err)}}
	}
	return nil
}

// decodeScalar parses a duration string. The suggested form is d's current
// value, the default when decoding onto [Default].
func (d *Duration) decodeScalar(n *yaml.Node) error {
	if n.Kind == yaml.ScalarNode {
		if v, ok := parseDuration(n.Value); ok {
			*d = Duration(v)
			return nil
		}
	}
	return fmt.Errorf("%s is not a duration (try %s)", describe(n), d.suggest(n.Value))
}

// parseDuration reads a Go duration ("90s", "4h30m") or a number of days
// ("7d", "1.5d"), as `watchdog snooze --for` does: a failure_window of a
// week reads as people write it. Days that do not fit a duration (about
// 292 years) are no duration.
func parseDuration(s string) (time.Duration, bool) {
	if v, err := time.ParseDuration(s); err == nil {
		return v, true
	}
	days, ok := strings.CutSuffix(s, "d")
	if !ok {
		return 0, false
	}
	n, err := strconv.ParseFloat(days, 64)
	if err != nil || n != n || n*24*float64(time.Hour) >= float64(1<<63-1) || n*24*float64(time.Hour) <= -float64(1<<63-1) {
		return 0, false
	}
	return time.Duration(n * 24 * float64(time.Hour)), true
}

// suggest returns a duration to try instead of the invalid text s.
func (d Duration) suggest(_ string) string {
	if d > 0 {
		return d.String()
	}
	return "30s"
}
