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
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/user"
	"reflect"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/robfig/cron/v3"
	"go.yaml.in/yaml/v3"
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
}

// Store is the "store" section.
type Store struct {
	// Driver is the storage backend; only "sqlite" exists.
	Driver string `yaml:"driver"`
	// DSN is the data source; for sqlite, the database file path.
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

// UnmarshalYAML accepts the scalar forms `auth: none` and `auth: token`
// beside the mapping, which it decodes as strictly as the rest of the file
// (an unknown key is reported like any other). Problems are returned as a
// *yaml.TypeError so that Parse names their keys.
func (a *Auth) UnmarshalYAML(n *yaml.Node) error {
	switch n.Kind {
	case yaml.ScalarNode:
		if n.ShortTag() == "!!null" {
			return nil
		}
		if n.Value == AuthNone || n.Value == AuthToken {
			a.Mode = n.Value
			return nil
		}
	case yaml.MappingNode:
		var errs []string
		for i := 0; i+1 < len(n.Content); i += 2 {
			if k := n.Content[i]; typeAt("auth."+k.Value) == nil {
				// The message yaml.v3 gives for an unknown key, which
				// decodeProblems rewrites with the key's path.
				errs = append(errs, fmt.Sprintf("line %d: field %s not found in type config.Auth", k.Line, k.Value))
			}
		}
		type plain Auth // without this method, so no recursion
		var te *yaml.TypeError
		if err := n.Decode((*plain)(a)); errors.As(err, &te) {
			errs = append(errs, te.Errors...)
		} else if err != nil {
			return err
		}
		if len(errs) > 0 {
			return &yaml.TypeError{Errors: errs}
		}
		return nil
	}
	return &yaml.TypeError{Errors: []string{fmt.Sprintf("line %d: column %d: %s is not a mapping, none or token", n.Line, n.Column, describe(n))}}
}

// Thresholds is the "thresholds" section. Every value must be positive,
// IdleAfter < StalledAfter and SlowAfter < SlowUntil.
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
}

// Jobs is the "jobs" section: one cron spec per scheduled job, in the syntax
// [CronParser] accepts (five fields, or a descriptor such as "@every 15s" or
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
	// Vacuum drops expired snoozes and stale dismissals.
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

// Default values of each section, as in SPEC.md. [Default] copies them.
var (
	// DefaultStore is an SQLite file in the working directory.
	DefaultStore = Store{Driver: "sqlite", DSN: "./watchdog.db"}
	// DefaultThresholds are the SPEC's thresholds.
	DefaultThresholds = Thresholds{
		IdleAfter:     Duration(10 * time.Minute),
		StalledAfter:  Duration(60 * time.Minute),
		SlowAfter:     Duration(60 * time.Minute),
		SlowUntil:     Duration(3 * time.Hour),
		TerminalGrace: Duration(30 * time.Second),
		PhantomAfter:  Duration(time.Hour),
		MisfireGrace:  Duration(5 * time.Minute),
		FailureWindow: Duration(24 * time.Hour),
	}
	// DefaultJobs are the SPEC's job schedules.
	DefaultJobs = Jobs{
		Sweep:           "@every 15s",
		EnforceTerminal: "@every 30s",
		ReapPhantoms:    "@every 5m",
		CheckSchedules:  "@every 1m",
		Vacuum:          "@daily",
	}
	// DefaultReaper writes, bounded to 500 changes a run, and kills nothing.
	DefaultReaper = Reaper{MaxPerRun: 500, KillGrace: Duration(10 * time.Second), KillUsers: []string{}}
	// DefaultLog logs at info, format chosen by whether stderr is a terminal.
	DefaultLog = Log{Level: "info"}
)

// CronParser parses job specs here and must be the parser the scheduler uses
// (cron.New(cron.WithParser(config.CronParser))), so that a spec that
// validates is a spec that runs: five standard fields, descriptors such as
// @daily and @every 15s, and an optional CRON_TZ= prefix.
var CronParser = cron.NewParser(cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow | cron.Descriptor)

// Default returns a new Config holding every default value. It validates.
func Default() *Config {
	return &Config{
		Store:        DefaultStore,
		Listen:       DefaultListen,
		AllowedHosts: []string{},
		Thresholds:   DefaultThresholds,
		Jobs:         DefaultJobs,
		Reaper:       DefaultReaper,
		Log:          DefaultLog,
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
// holding only comments or an empty document, yields the defaults.
//
// On error the Config is nil and the error holds every problem found, one per
// line (errors.Join), in one of three kinds, each checked only when the one
// before found nothing: invalid YAML (the first problem only), decoding
// (unknown or repeated keys, wrong types, bad durations; ordered by line),
// then validation (values and the rules between them; in key order).
func Parse(data []byte) (*Config, error) {
	root, err := parseDocument(data)
	if err != nil {
		return nil, err
	}
	c := Default()
	if root != nil {
		dec := yaml.NewDecoder(bytes.NewReader(data))
		dec.KnownFields(true)
		if err := decodeProblems(dec.Decode(c), root); err != nil {
			return nil, err
		}
	}
	if err := c.Validate(); err != nil {
		return nil, err
	}
	return c, nil
}

// Validate checks every value and the rules between them, section by section.
// It returns nil, or every problem found, one per line.
func (c *Config) Validate() error {
	var errs []error
	errs = append(errs, c.Store.validate()...)
	errs = append(errs, c.validateListen()...)
	errs = append(errs, c.validateAllowedHosts()...)
	errs = append(errs, c.Auth.validate()...)
	errs = append(errs, c.Thresholds.validate()...)
	errs = append(errs, c.Jobs.validate()...)
	errs = append(errs, c.Reaper.validate()...)
	errs = append(errs, c.Log.validate()...)
	return errors.Join(errs...)
}

func (s Store) validate() []error {
	var errs []error
	if s.Driver != "sqlite" {
		errs = append(errs, fmt.Errorf("store.driver: %q is not supported (only sqlite)", s.Driver))
	}
	if s.DSN == "" {
		errs = append(errs, errors.New("store.dsn: must not be empty"))
	}
	return errs
}

// validateListen checks the address and, as the daemon refuses to serve a
// non-loopback address without a token, that auth is then not "none".
func (c *Config) validateListen() []error {
	host, port, err := net.SplitHostPort(c.Listen)
	if err != nil || port == "" {
		return []error{fmt.Errorf("listen: %q is not host:port", c.Listen)}
	}
	if _, err := strconv.ParseUint(port, 10, 16); err != nil {
		return []error{fmt.Errorf("listen: %q is not host:port (the port must be a number from 0 to 65535)", c.Listen)}
	}
	if c.Auth.None() && !isLoopback(host) {
		return []error{fmt.Errorf("auth: none is refused with listen %q, not a loopback address: anyone who can reach it could write (remove auth: none, and the daemon creates a token)", c.Listen)}
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

// isLoopback reports whether host is a loopback IP or "localhost". An empty
// host (all interfaces) and any other name are not.
func isLoopback(host string) bool {
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
		if _, err := CronParser.Parse(job.spec); err != nil {
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
	errs = append(errs, positive("reaper", []namedDuration{{"kill_grace", r.KillGrace, DefaultReaper.KillGrace}})...)
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
// *yaml.TypeError (so decoding goes on and collects every problem) whose text
// starts "line L: column C: ", which [Parse] replaces with the key's path.
// The suggested form is d's current value, the default when decoding onto
// [Default].
func (d *Duration) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind == yaml.ScalarNode {
		v, err := time.ParseDuration(n.Value)
		if err == nil {
			*d = Duration(v)
			return nil
		}
	}
	return &yaml.TypeError{Errors: []string{fmt.Sprintf("line %d: column %d: %s is not a duration (try %s)",
		n.Line, n.Column, describe(n), d.suggest(n.Value))}}
}

// suggest returns a duration to try instead of the invalid text s.
func (d Duration) suggest(s string) string {
	if days, ok := strings.CutSuffix(s, "d"); ok {
		if n, err := strconv.ParseFloat(days, 64); err == nil && n > 0 {
			return Duration(time.Duration(n * 24 * float64(time.Hour))).String()
		}
	}
	if d > 0 {
		return d.String()
	}
	return "30s"
}

// parseDocument returns the one document of data, or nil when there is none
// (or it is empty).
func parseDocument(data []byte) (*yaml.Node, error) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, nil
		}
		return nil, syntaxError(err)
	}
	var next yaml.Node
	switch err := dec.Decode(&next); {
	case err == nil:
		return nil, fmt.Errorf("line %d: more than one YAML document (a config file holds one)", next.Line)
	case !errors.Is(err, io.EOF):
		return nil, syntaxError(err)
	}
	if len(doc.Content) == 0 || doc.Content[0].ShortTag() == "!!null" {
		return nil, nil
	}
	return &doc, nil
}

var (
	reSyntax = regexp.MustCompile(`^yaml: line (\d+): (.*)$`)
	// yaml.v3 numbers the lines of its parser's errors (not its scanner's)
	// from 0; these are all of the parser's.
	reParserProblem = regexp.MustCompile(`^(did not find expected |found duplicate %|found incompatible YAML|found undefined tag)`)
)

func syntaxError(err error) error {
	if m := reSyntax.FindStringSubmatch(err.Error()); m != nil {
		line := atoi(m[1])
		if reParserProblem.MatchString(m[2]) {
			line++
		}
		return fmt.Errorf("line %d: invalid YAML: %s", line, m[2])
	}
	return fmt.Errorf("invalid YAML: %s", strings.TrimPrefix(err.Error(), "yaml: "))
}

// The messages of yaml.v3's TypeError, and of Duration.UnmarshalYAML.
var (
	reUnknown   = regexp.MustCompile(`^line (\d+): field (.*) not found in type (\S+)$`)
	reDuplicate = regexp.MustCompile(`^line (\d+): mapping key (".*") already defined at line (\d+)$`)
	reSetTwice  = regexp.MustCompile(`^line (\d+): field (.*) already set in type \S+$`)
	reType      = regexp.MustCompile("(?s)^line (\\d+): cannot unmarshal (\\S+)(?: `(.*)`)? into (\\S+)$")
	reAt        = regexp.MustCompile(`(?s)^line (\d+): column (\d+): (.*)$`)
)

var reLine = regexp.MustCompile(`^line (\d+): `)

// decodeProblems rewrites the decoder's error in terms of key paths, found in
// the parsed document, adds what yaml.v3 lets through (it truncates 1.5 to an
// int), and orders the problems by line.
func decodeProblems(err error, root *yaml.Node) error {
	var te *yaml.TypeError
	if err != nil && !errors.Is(err, io.EOF) && !errors.As(err, &te) {
		return syntaxError(err)
	}
	type problem struct {
		line int
		msg  string
	}
	var ps []problem
	seen := map[string]bool{}
	add := func(line int, msg string) {
		if !seen[msg] {
			seen[msg] = true
			ps = append(ps, problem{line, msg})
		}
	}
	idx := index(root)
	if te != nil {
		for _, msg := range te.Errors {
			line := 0
			if m := reLine.FindStringSubmatch(msg); m != nil {
				line = atoi(m[1])
			}
			add(line, idx.rewrite(msg))
		}
	}
	for _, e := range idx {
		if t := typeAt(e.path); !e.isKey && t != nil && t.Kind() == reflect.Int && e.node.ShortTag() == "!!float" {
			add(e.node.Line, fmt.Sprintf("%s: %s is not an integer", e.path, describe(e.node)))
		}
	}
	sort.SliceStable(ps, func(i, j int) bool { return ps[i].line < ps[j].line })
	errs := make([]error, 0, len(ps))
	for _, p := range ps {
		errs = append(errs, errors.New(p.msg))
	}
	return errors.Join(errs...)
}

// entry is one mapping key, or one value, of the document.
type entry struct {
	path  string // dotted key path; "" for the top-level value
	isKey bool
	node  *yaml.Node
}

type entries []entry

// index lists every key and value reachable through mappings.
func index(doc *yaml.Node) entries {
	var es entries
	var walk func(path string, n *yaml.Node)
	walk = func(path string, n *yaml.Node) {
		es = append(es, entry{path: path, node: n})
		if n.Kind != yaml.MappingNode {
			return
		}
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			p := k.Value
			if path != "" {
				p = path + "." + k.Value
			}
			es = append(es, entry{path: p, isKey: true, node: k})
			walk(p, v)
		}
	}
	walk("", doc.Content[0])
	return es
}

// find returns the path of the first key (or value) at line (and column, if
// not 0) accepted by match, and whether there was one.
func (es entries) find(isKey bool, line, column int, match func(entry) bool) (string, bool) {
	for _, e := range es {
		if e.isKey == isKey && e.node.Line == line && (column == 0 || e.node.Column == column) && match(e) {
			return e.path, true
		}
	}
	return "", false
}

// rewrite turns one yaml.v3 type error message into ours. A message it does
// not know, or cannot place, is returned as it is.
func (es entries) rewrite(msg string) string {
	if m := reUnknown.FindStringSubmatch(msg); m != nil {
		line := atoi(m[1])
		p, ok := es.find(true, line, 0, func(e entry) bool {
			return e.node.Value == m[2] && typeString(parent(e.path)) == m[3]
		})
		if !ok {
			return fmt.Sprintf("line %d: unknown key %q", line, m[2]) // reached by a merge key (<<)
		}
		s := fmt.Sprintf("line %d: unknown key %q", line, p)
		if alt := suggestKey(p); alt != "" {
			s += fmt.Sprintf(" (did you mean %q?)", alt)
		}
		return s
	}
	if m := reDuplicate.FindStringSubmatch(msg); m != nil {
		line := atoi(m[1])
		key, _ := strconv.Unquote(m[2])
		if p, ok := es.find(true, line, 0, func(e entry) bool { return e.node.Value == key }); ok {
			return fmt.Sprintf("line %d: duplicate key %q (first at line %s)", line, p, m[3])
		}
	}
	if m := reSetTwice.FindStringSubmatch(msg); m != nil {
		line := atoi(m[1])
		if p, ok := es.find(true, line, 0, func(e entry) bool { return e.node.Value == m[2] }); ok {
			return fmt.Sprintf("line %d: duplicate key %q", line, p)
		}
	}
	if m := reAt.FindStringSubmatch(msg); m != nil {
		if p, ok := es.find(false, atoi(m[1]), atoi(m[2]), func(entry) bool { return true }); ok {
			return p + ": " + m[3]
		}
	}
	if m := reType.FindStringSubmatch(msg); m != nil {
		line, tag, shown, goType := atoi(m[1]), m[2], strings.TrimSuffix(m[3], "..."), m[4]
		p, ok := es.find(false, line, 0, func(e entry) bool {
			switch n := e.node; {
			case typeString(e.path) != goType:
				return false
			case tag == "!!seq":
				return n.Kind == yaml.SequenceNode
			case tag == "!!map":
				return n.Kind == yaml.MappingNode
			default:
				return n.Kind == yaml.ScalarNode && strings.HasPrefix(n.Value, shown)
			}
		})
		if ok {
			n := es.node(p)
			if p == "" {
				p = fmt.Sprintf("line %d: top level", line)
			}
			return fmt.Sprintf("%s: %s is not %s", p, describe(n), want(goType))
		}
	}
	return msg
}

// node returns the value node at path.
func (es entries) node(path string) *yaml.Node {
	for _, e := range es {
		if !e.isKey && e.path == path {
			return e.node
		}
	}
	return nil
}

// describe names what a node holds: its quoted text, "a list" or "a mapping".
func describe(n *yaml.Node) string {
	switch n.Kind {
	case yaml.SequenceNode:
		return "a list"
	case yaml.MappingNode:
		return "a mapping"
	case yaml.AliasNode:
		return "an alias"
	}
	return strconv.Quote(n.Value)
}

// want names what a Go type, as yaml.v3 prints it, accepts.
func want(goType string) string {
	switch goType {
	case "int":
		return "an integer"
	case "bool":
		return "true or false"
	case "string":
		return "a string"
	}
	return "a mapping" // the sections, config.Config and its structs
}

// suggestKey returns the known key closest to the unknown dotted path, or ""
// when none is close enough to be a likely typo.
func suggestKey(path string) string {
	parts := strings.Split(path, ".")
	t := typeAt(parent(path))
	if t == nil || t.Kind() != reflect.Struct {
		return ""
	}
	typo := strings.ToLower(parts[len(parts)-1])
	best, bestDist := "", min(2, len(typo)/3)+1 // a typo: one edit in three letters, two at most
	for i := range t.NumField() {
		key := yamlKey(t.Field(i))
		if d := editDistance(typo, key); d < bestDist {
			best, bestDist = key, d
		}
	}
	if best == "" {
		return ""
	}
	return strings.Join(append(parts[:len(parts)-1:len(parts)-1], best), ".")
}

// typeAt returns the Go type that decodes the dotted key path ("" is the
// whole Config), or nil if no key has that path.
func typeAt(path string) reflect.Type {
	t := reflect.TypeFor[Config]()
	if path == "" {
		return t
	}
	for key := range strings.SplitSeq(path, ".") {
		if t.Kind() != reflect.Struct {
			return nil
		}
		var next reflect.Type
		for i := range t.NumField() {
			if yamlKey(t.Field(i)) == key {
				next = t.Field(i).Type
			}
		}
		if next == nil {
			return nil
		}
		t = next
	}
	return t
}

// typeString is typeAt(path) as yaml.v3 prints it in errors.
func typeString(path string) string {
	if t := typeAt(path); t != nil {
		return t.String()
	}
	return ""
}

// parent returns the path of the mapping holding the key at path.
func parent(path string) string {
	i := strings.LastIndex(path, ".")
	if i < 0 {
		return ""
	}
	return path[:i]
}

func yamlKey(f reflect.StructField) string {
	key, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
	return key
}

// editDistance is the Levenshtein distance between a and b.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

func atoi(s string) int {
	n, _ := strconv.Atoi(s)
	return n
}
