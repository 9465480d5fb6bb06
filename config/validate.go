package config

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"

	"watchdog/internal/cronspec"
	"watchdog/transitions"
)

func (w Web) validate() []error {
	if w.ConfigFile != "" && !filepath.IsAbs(w.ConfigFile) {
		return []error{fmt.Errorf("web.config_file: %q must be an absolute path", w.ConfigFile)}
	}
	return nil
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

// validateStoreAuth: the daemon's own token lives beside an SQLite file; a
// server database has no "beside", so postgres needs a token file.
func (c *Config) validateStoreAuth() []error {
	if c.Store.Driver == "postgres" && !c.Auth.None() && c.Auth.TokenFile == "" {
		return []error{errors.New("auth.token_file: required with store.driver: postgres (the daemon's own token is kept beside an SQLite file; a server has no such place), or auth: none on loopback")}
	}
	return nil
}

func (c *Config) validateListen() []error {
	if err := CheckListen(c.Listen, c.Auth.None()); err != nil {
		return []error{err}
	}
	return nil
}

// CheckListen refuses a listen address that is not host:port, and a
// non-loopback one with auth: none: every mutating endpoint would be open
// to the network. The daemon checks again before it listens.
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

// reHostName is a DNS name as a Host header carries it (underscores too).
var reHostName = regexp.MustCompile(`^[A-Za-z0-9_]([A-Za-z0-9_-]*[A-Za-z0-9_])?(\.[A-Za-z0-9_]([A-Za-z0-9_-]*[A-Za-z0-9_])?)*\.?$`)

// validateAllowedHosts wants bare host names, as the API compares them
// with the Host header's name.
func (c *Config) validateAllowedHosts() []error {
	var errs []error
	for i, h := range c.AllowedHosts {
		if !reHostName.MatchString(h) || len(h) > 253 {
			errs = append(errs, fmt.Errorf("allowed_hosts[%d]: %q is not a host name (give the bare name, e.g. watchdog.example.org, without scheme, port or path)", i, h))
		}
	}
	return errs
}

// IsLoopback reports whether host is a loopback IP or "localhost"; any
// other name may resolve anywhere.
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

// checkHTTPURL wants an absolute http or https URL; the error completes a
// sentence starting with the quoted value.
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
