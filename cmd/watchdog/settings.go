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

// defaultConfigPath is the packaged unit's config, used when neither
// --config nor WATCHDOG_CONFIG names one. A variable so that no test reads
// the host's real file.
var defaultConfigPath = "/etc/watchdog/config.yaml"

// configEnv names the daemon's config file in the environment.
const configEnv = "WATCHDOG_CONFIG"

// settings is the daemon's config as a command on its host resolved it
// (resolveConfig).
type settings struct {
	// cfg is the file's config, or the defaults; never nil.
	cfg *config.Config
	// path is the file read, "" when none was found.
	path string
	// from is what named path: "--config", configEnv or "the default path".
	from string
	// recorded is what the database's daemon recorded (adoptRecorded), if any.
	recorded *recordedSettings
}

// recordedSettings say whose recorded settings a command judges with.
type recordedSettings struct {
	Host   string        `json:"host"`
	Source string        `json:"source"` // the daemon's config file, "" for the defaults
	At     unixtime.Time `json:"recorded_at"`
	// Differs names the keys where the command's own config differs ("idle_after 5m≠10m").
	Differs []string `json:"differs,omitempty"`
}

// resolveConfig is the one rule by which a command finds the daemon's
// settings: --config, else WATCHDOG_CONFIG, else defPath when it exists,
// else the defaults. A named file must exist and any file found must be
// valid, so the command and the daemon judge with the same thresholds.
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
			// The packaged file is root:watchdog 0640: say how to read it.
			msg += "; run as root or a member of the file's group, or name a readable config with --config or " + configEnv
		}
		return settings{}, errors.New(msg)
	}
	return settings{cfg: cfg, path: path, from: from}, nil
}

// note is the line a command prints on stderr when it does not judge with
// the daemon's config ("" when it does).
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

// printNote prints note on w, once the store is open, so a failing command
// says only its one error line.
func (s settings) printNote(w io.Writer) {
	if n := s.note(); n != "" {
		_, _ = io.WriteString(w, n)
	}
}

// localSettings resolves a store-reading command's settings and its
// database: --db, else WATCHDOG_DB, else the config's store.dsn, so it
// reads what the daemon serves.
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

// adoptRecorded makes s's thresholds those its database's daemon recorded
// (this host's, else the newest), so a command judges as the daemon does;
// anything unreadable changes nothing.
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

// addConfigFlag gives a store-reading command the --config flag.
func addConfigFlag(c *cobra.Command, path *string) {
	c.Flags().StringVar(path, "config", "", "the daemon's config `FILE`: its thresholds, host_id and (without --db or WATCHDOG_DB) store.dsn "+
		"(default: $"+configEnv+", else "+defaultConfigPath+" when it exists, else the default thresholds, said on stderr)")
}
