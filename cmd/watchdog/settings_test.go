package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"watchdog/internal/unixtime"
)

// TestResolveConfig holds the one rule by which every command that reads
// or judges this host's store finds the daemon's settings: --config, else
// WATCHDOG_CONFIG, else the default path when it exists, else the
// defaults (said in a note); a named file must exist, a found one must be
// valid.
func TestResolveConfig(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	flagCfg := write("flag.yaml", "thresholds:\n  failure_window: 1m\n")
	envCfg := write("env.yaml", "thresholds:\n  failure_window: 2m\n")
	defCfg := write("default.yaml", "thresholds:\n  failure_window: 3m\nstore:\n  dsn: /srv/w.db\n")
	bad := write("bad.yaml", "thresholds:\n  failure_widow: 3m\n")
	absent := filepath.Join(dir, "absent.yaml")

	for _, tc := range []struct {
		name               string
		flag, env, def     string
		wantPath, wantFrom string
		wantWindow         time.Duration
		wantErr            []string // all in the one error line
		wantNote           bool
	}{
		{"the flag", flagCfg, "", defCfg, flagCfg, "--config", time.Minute, nil, false},
		{"the flag beats the environment", flagCfg, envCfg, defCfg, flagCfg, "--config", time.Minute, nil, false},
		{"the environment beats the default path", "", envCfg, defCfg, envCfg, "WATCHDOG_CONFIG", 2 * time.Minute, nil, false},
		{"the default path when it exists", "", "", defCfg, defCfg, "the default path", 3 * time.Minute, nil, false},
		{"nothing found: the defaults, said", "", "", absent, "", "", 24 * time.Hour, nil, true},
		{"no default path at all", "", "", "", "", "", 24 * time.Hour, nil, true},
		{"a missing file the flag names", absent, envCfg, defCfg, "", "", 0, []string{absent, "(--config)", "no such file"}, false},
		{"a missing file the environment names", "", absent, defCfg, "", "", 0, []string{absent, "(WATCHDOG_CONFIG)", "no such file"}, false},
		{"an invalid file at the default path", "", "", bad, "", "", 0, []string{bad, "(the default path)", "failure_widow"}, false},
		{"an invalid file the flag names", bad, "", defCfg, "", "", 0, []string{bad, "(--config)", "failure_widow"}, false},
		{"a directory at the default path", "", "", dir, "", "", 0, []string{dir, "(the default path)"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := resolveConfig(tc.flag, tc.env, tc.def)
			if tc.wantErr != nil {
				if err == nil {
					t.Fatalf("no error; settings from %q", s.path)
				}
				msg := err.Error()
				for _, w := range tc.wantErr {
					if !strings.Contains(msg, w) {
						t.Errorf("error %q does not say %q", msg, w)
					}
				}
				if strings.Contains(msg, "\n") {
					t.Errorf("error is not one line: %q", msg)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if s.path != tc.wantPath || s.from != tc.wantFrom || s.cfg == nil || time.Duration(s.cfg.Thresholds.FailureWindow) != tc.wantWindow {
				t.Errorf("got path %q from %q window %v; want %q from %q window %v", s.path, s.from, s.cfg.Thresholds.FailureWindow, tc.wantPath, tc.wantFrom, tc.wantWindow)
			}
			if note := s.note(); (note != "") != tc.wantNote || strings.Count(note, "\n") > 1 {
				t.Errorf("note %q, want one: %v", note, tc.wantNote)
			}
		})
	}
}

// TestJudgeWarning is the line status and attention print when no daemon
// serves the database: none while one does; when none ever judged it;
// how long ago the last one did, and which.
func TestJudgeWarning(t *testing.T) {
	now := time.Date(2026, 11, 23, 14, 14, 11, 0, time.UTC)
	at := unixtime.Of(now.Add(-12 * time.Minute))
	for _, tc := range []struct {
		name string
		j    judgedBy
		want []string
	}{
		{"a daemon serves it", judgedBy{DaemonServing: true, LastJudgedAt: &at, LastJudgedBy: "h1"}, nil},
		{"never judged", judgedBy{}, []string{"no watchdog daemon is serving this database", "no daemon ever judged it"}},
		{"stopped 12m ago", judgedBy{LastJudgedAt: &at, LastJudgedBy: "h1"},
			[]string{"no watchdog daemon is serving this database; last judged 12m ago", "host h1", "2026-11-23 14:02:11Z"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := tc.j.warning(now)
			if tc.want == nil {
				if got != "" {
					t.Errorf("warning %q, want none", got)
				}
				return
			}
			if strings.Count(got, "\n") != 1 || !strings.HasSuffix(got, "\n") || !strings.HasPrefix(got, "watchdog: ") {
				t.Errorf("warning %q is not one line", got)
			}
			for _, w := range tc.want {
				if !strings.Contains(got, w) {
					t.Errorf("warning %q does not say %q", got, w)
				}
			}
		})
	}
}

// onlyJudgeLines reports whether stderr holds nothing but the lines a
// command reading a database prints about who judges (no daemon config
// found; no daemon serving the database): what the tests of the command's
// own output allow beside it.
func onlyJudgeLines(stderr string) bool {
	for line := range strings.SplitSeq(strings.TrimRight(stderr, "\n"), "\n") {
		if line != "" && !strings.HasPrefix(line, "watchdog: no daemon config found (") &&
			!strings.HasPrefix(line, "watchdog: no watchdog daemon is serving this database;") {
			return false
		}
	}
	return true
}
