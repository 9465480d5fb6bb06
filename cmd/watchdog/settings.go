package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"watchdog/cmd/watchdog/internal/target"
	"watchdog/config"
	"watchdog/internal/unixtime"
	"watchdog/state"
)

// defaultConfigPath is where a command on the daemon's host finds the
// daemon's config when neither --config nor WATCHDOG_CONFIG names one:
// the file deploy/systemd/watchdog.service starts `serve --config` with.
// A variable so that no test reads the host's real file: the tests'
// binary is linked with another path (internal/testenv), and this
// package's TestMain sets it for the in-process tests.
var defaultConfigPath = "/etc/watchdog/config.yaml"

// configEnv names the daemon's config file in the environment, for the
// commands that read or judge this host's store.
const configEnv = "WATCHDOG_CONFIG"

// settings is the daemon's config as a command on its host resolved it
// (resolveConfig): the thresholds it judges with, the store it reads, the
// host it is.
type settings struct {
	// cfg is the file's config, or the defaults when none was found;
	// never nil.
	cfg *config.Config
	// path is the file read, "" when none was found.
	path string
	// from is what named path: "--config", configEnv or "the default
	// path".
	from string
	// recorded, when the database holds them, are the settings its daemon
	// recorded (adoptRecorded): cfg's thresholds are those.
	recorded *recordedSettings
}

// recordedSettings say whose recorded settings a command judges with.
type recordedSettings struct {
	Host   string        `json:"host"`
	Source string        `json:"source"` // the daemon's config file, "" for the defaults
	At     unixtime.Time `json:"recorded_at"`
	// Differs names the keys where the config the command found itself
	// differs ("idle_after 5m≠10m", the command's value first).
	Differs []string `json:"differs,omitempty"`
}

// resolveConfig is the one rule by which a command finds the daemon's
// settings: the file flagPath (--config) names, else envPath
// (WATCHDOG_CONFIG), else defPath when it exists, else the defaults
// (path ""). A file named by the flag or the environment must exist; any
// file found must be valid: the error names the file, what named it and
// every problem, on one line. The daemon, started with the same file,
// judges with the same thresholds, so the command and the daemon agree.
func resolveConfig(flagPath, envPath, defPath string) (settings, error) {
	path, from := flagPath, "--config"
	if path == "" {
		path, from = envPath, configEnv
	}
	if path == "" {
		path, from = defPath, "the default path"
		if _, err := os.Stat(defPath); defPath == "" || errors.Is(err, fs.ErrNotExist) {
			cfg, err := config.Load("")
			if err != nil {
				return settings{}, fmt.Errorf("the default config: %w", err)
			}
			return settings{cfg: cfg}, nil
		}
	}
	cfg, err := config.Load(path)
	if err != nil {
		msg := fmt.Sprintf("config %s (%s): %s", path, from, strings.ReplaceAll(err.Error(), "\n", "; "))
		if errors.Is(err, fs.ErrPermission) {
			// The packaged file is root:watchdog 0640: say how to get
			// the daemon's settings rather than judge with others.
			msg += "; run as root or a member of the file's group, or name a readable config with --config or " + configEnv
		}
		return settings{}, errors.New(msg)
	}
	return settings{cfg: cfg, path: path, from: from}, nil
}

// note is the one line a command prints on stderr when it found no
// config and judges with the defaults ("" when it found one): whoever
// reads its output must know it may not be the daemon's judgement.
func (s settings) note() string {
	if r := s.recorded; r != nil {
		if s.path != "" && len(r.Differs) == 0 {
			return "" // the command's config says what the daemon's does
		}
		from := "its defaults"
		if r.Source != "" {
			from = "from " + r.Source
		}
		line := fmt.Sprintf("watchdog: judging with the settings the daemon of host %s recorded at %s (%s)", r.Host, state.Stamp(r.At.Time), from)
		if len(r.Differs) > 0 {
			line += fmt.Sprintf("; the config %s (%s) differs: %s", s.path, s.from, strings.Join(r.Differs, ", "))
		}
		return line + "\n"
	}
	if s.path != "" {
		return ""
	}
	return fmt.Sprintf("watchdog: no daemon config found (--config, %s, %s); judging with the default thresholds\n", configEnv, defaultConfigPath)
}

// printNote prints note on w. It is called once the command has opened
// its store, so that a command that fails says only its one error line.
func (s settings) printNote(w io.Writer) {
	if n := s.note(); n != "" {
		_, _ = io.WriteString(w, n)
	}
}

// localSettings resolves the settings of a command that reads or judges
// this host's store (resolveConfig over its --config flag, WATCHDOG_CONFIG
// and defaultConfigPath), and the database it opens: --db when given, else
// WATCHDOG_DB, else the config's store.dsn (the defaults' ./watchdog.db
// without a config), so the command reads what the daemon serves.
func localSettings(cmd *cobra.Command, db string) (settings, string, error) {
	var flagPath string
	if f := cmd.Flags().Lookup("config"); f != nil {
		flagPath = f.Value.String()
	}
	s, err := resolveConfig(flagPath, os.Getenv(configEnv), defaultConfigPath)
	if err != nil {
		return s, "", err
	}
	db = configDB(cmd, db, s.cfg)
	s.adoptRecorded(cmd.Context(), db)
	return s, db, nil
}

// adoptRecorded makes the thresholds of s those its database's daemon
// recorded (store.DaemonSettings), so that a command judges as the
// daemon does whatever config it found: this host's daemon's, else the
// newest. Nothing changes when the database cannot be opened (the
// command's own open says why), holds none, or holds a section that no
// longer reads.
func (s *settings) adoptRecorded(ctx context.Context, db string) {
	if db == "" {
		return
	}
	st, err := target.OpenStore(ctx, db, false)
	if err != nil {
		return
	}
	defer st.Close()
	all, err := st.Settings(ctx)
	if err != nil || len(all) == 0 {
		return
	}
	self := cmp.Or(s.cfg.HostID, localHost().HostID())
	host, ds := self, all[self]
	if _, ok := all[self]; !ok {
		host = ""
		for h, d := range all {
			if host == "" || d.At.After(ds.At) || (d.At.Equal(ds.At) && h < host) {
				host, ds = h, d
			}
		}
	}
	th, err := config.ParseThresholds(ds.YAML)
	if err != nil {
		return
	}
	r := &recordedSettings{Host: host, Source: ds.Source, At: unixtime.Of(ds.At)}
	if s.path != "" {
		r.Differs = config.ThresholdsDiff(s.cfg.Thresholds, th)
	}
	cfg := *s.cfg
	cfg.Thresholds = th
	s.cfg, s.recorded = &cfg, r
}

// addConfigFlag gives a command that reads or judges this host's store
// the --config flag, with help that says how resolveConfig finds the
// daemon's config without it.
func addConfigFlag(c *cobra.Command, path *string) {
	c.Flags().StringVar(path, "config", "", "the daemon's config `FILE`: its thresholds, host_id and (without --db or WATCHDOG_DB) store.dsn "+
		"(default: $"+configEnv+", else "+defaultConfigPath+" when it exists, else the default thresholds, said on stderr)")
}
