package e2e

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"reflect"
	"strings"
	"syscall"
	"testing"
	"time"

	"watchdog/internal/testenv"
)

// One judgement, everywhere: observations 5 and 6 of the issue, replayed
// against the built binary and a real daemon on a real SQLite file.

// judgeQuietJobs keeps the daemon's scheduled jobs out of the way: what
// these tests read is the config's thresholds and the daemon's presence.
const judgeQuietJobs = `jobs:
  sweep: "@every 1h"
  enforce_terminal: "@every 1h"
  reap_phantoms: "@every 1h"
  check_schedules: "@every 1h"
  vacuum: "@daily"
`

// judgeDaemonConfig writes the daemon's config (store.dsn db, the
// thresholds given) into dir and returns its path: the file the daemon
// is started with and the CLI resolves.
func judgeDaemonConfig(t *testing.T, dir, db, thresholds string) string {
	t.Helper()
	return writeFile(t, dir, "config.yaml", fmt.Sprintf("store:\n  dsn: %q\nlisten: 127.0.0.1:0\nauth: none\n%s%slog:\n  level: info\n  format: json\n",
		db, thresholds, judgeQuietJobs))
}

// attentionTotal reads the total of `attention --json` (an object, the
// API's body, plus "judge" from a database).
func attentionTotal(t *testing.T, r result) int {
	t.Helper()
	if r.code != 0 {
		t.Fatalf("attention: %+v", r)
	}
	var q struct {
		Total int `json:"total"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &q); err != nil {
		t.Fatalf("attention --json: %v\n%s", err, r.stdout)
	}
	return q.Total
}

// Observation 5: the daemon runs with failure_window 3m; four sessions
// failed 30 minutes ago (within the CLI's old 24h default, outside the
// daemon's window) and one just now. The queue on the daemon's host is
// one item whichever way it is read: from the database with the config
// found through WATCHDOG_CONFIG (whose store.dsn names the database) or
// --config, and through the daemon. Without a config the command says on
// stderr that it judges with the defaults; an invalid config is one error
// line and changes nothing.
func TestJudgeSettingsObs5OneQueueOnTheDaemonsHost(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "watchdog.db")
	cfg := judgeDaemonConfig(t, dir, db, "thresholds:\n  failure_window: 3m\n")
	work := t.TempDir() // no ./watchdog.db here: the database must come from the config

	for i := 1; i <= 5; i++ {
		id := fmt.Sprintf("s%d", i)
		if r := wd(t, fmt.Sprintf(`{"type":"session","id":%q,"lifecycle":"running"}`, id), "register", "--db", db, "--json", "-"); r.code != 0 {
			t.Fatalf("register %s: %+v", id, r)
		}
		if r := wd(t, "", "transition", "session/"+id, "failed", "--reason", "run.failed.exit_nonzero", "--message", "exit 3", "--db", db); r.code != 0 {
			t.Fatalf("fail %s: %+v", id, r)
		}
	}
	// Four of them ended 30 minutes ago: within 24h, past 3m.
	past := float64(time.Now().Add(-30*time.Minute).UnixNano()) / 1e9
	res, err := testenv.SQL(t, db).Exec("UPDATE entities SET ended_at = ?, lifecycle_at = ?, updated_at = ? WHERE id IN ('s1', 's2', 's3', 's4')", past, past, past)
	if err != nil {
		t.Fatal(err)
	}
	if n, _ := res.RowsAffected(); n != 4 {
		t.Fatalf("backdated %d entities, want 4", n)
	}

	// The old way: a CLI with no config applies the default 24h and says so.
	r := rmtRun(t, work, nil, "", "attention", "--json", "--db", db)
	if got := attentionTotal(t, r); got != 5 {
		t.Errorf("attention with the defaults: %d items, want the 5 of a 24h window", got)
	}
	if !strings.Contains(r.stderr, "watchdog: no daemon config found (--config, WATCHDOG_CONFIG, ") || !strings.Contains(r.stderr, "judging with the default thresholds") ||
		strings.Count(r.stderr, "no daemon config found") != 1 {
		t.Errorf("no config: stderr must say so in one line: %q", r.stderr)
	}

	d, _ := rmtServe(t, cfg, filepath.Join(dir, "serve.log"))
	env := []string{"WATCHDOG_CONFIG=" + cfg}

	server := rmtRun(t, work, nil, "", "attention", "--json", "--server", d.base)
	if got := attentionTotal(t, server); got != 1 || server.stderr != "" {
		t.Errorf("through the daemon: %d items (want 1), stderr %q", got, server.stderr)
	}
	viaEnv := rmtRun(t, work, env, "", "attention", "--json")
	if got := attentionTotal(t, viaEnv); got != 1 || viaEnv.stderr != "" {
		t.Errorf("WATCHDOG_CONFIG (its store.dsn, its window): %d items (want 1), stderr %q", got, viaEnv.stderr)
	}
	viaFlag := rmtRun(t, work, nil, "", "attention", "--json", "--config", cfg)
	if got := attentionTotal(t, viaFlag); got != 1 || viaFlag.stderr != "" {
		t.Errorf("--config: %d items (want 1), stderr %q", got, viaFlag.stderr)
	}
	if l, s := withoutMoments(viaEnv.stdout), withoutMoments(server.stdout); l != s {
		t.Errorf("the local queue and the daemon's differ:\nlocal:\n%s\nserver:\n%s", l, s)
	}
	// Issue 39 #6: the settings travel with the database. With no config
	// of its own, a command on it judges with the daemon's recorded
	// thresholds and names them; with a config that differs, it says so
	// and still judges as the daemon does.
	bare := rmtRun(t, work, nil, "", "attention", "--json", "--db", db)
	if got := attentionTotal(t, bare); got != 1 || strings.Count(bare.stderr, "\n") != 1 ||
		!strings.Contains(bare.stderr, "judging with the settings the daemon of host ") || !strings.Contains(bare.stderr, "(from "+cfg+")") {
		t.Errorf("no config, the daemon's database: %d items (want the daemon's 1), stderr %q", got, bare.stderr)
	}
	other := writeFile(t, dir, "other.yaml", "thresholds:\n  failure_window: 48h\n  idle_after: 5m\n")
	mine := rmtRun(t, work, nil, "", "attention", "--json", "--db", db, "--config", other)
	if got := attentionTotal(t, mine); got != 1 || !strings.Contains(mine.stderr, "the config "+other+" (--config) differs: idle_after 5m≠10m, failure_window 48h≠3m") {
		t.Errorf("a config that differs: %d items (want the daemon's 1), stderr %q", got, mine.stderr)
	}
	if j := statusJudge(t, rmtRun(t, work, nil, "", "status", "--json", "--db", db)); j.Settings == nil || j.Settings.Source != cfg {
		t.Errorf("status --json's judge does not name the recorded settings: %+v", j)
	}

	local := rmtRun(t, work, env, "", "attention")
	remote := rmtRun(t, work, nil, "", "attention", "--server", d.base)
	if local.stdout != remote.stdout || !strings.Contains(local.stdout, "session:s5:run.failed.exit_nonzero") || strings.Contains(local.stdout, "session:s1:") {
		t.Errorf("attention: local\n%s\nthrough the daemon\n%s", local.stdout, remote.stdout)
	}

	// The one-shot judges take the same settings: no note, the same
	// database.
	for _, args := range [][]string{{"reap", "--dry-run"}, {"probe", "--entity", "session/s5"}} {
		r := rmtRun(t, work, env, "", args...)
		if strings.Contains(r.stderr, "no daemon config found") || strings.Contains(r.stderr, "no database") || strings.Contains(r.stderr, "panic") {
			t.Errorf("%v with WATCHDOG_CONFIG: %+v", args, r)
		}
	}

	// A config that exists but is invalid: one line naming the file and
	// the key, a non-zero exit, nothing changed; never the defaults.
	bad := writeFile(t, dir, "bad.yaml", "thresholds:\n  failure_widow: 3m\n")
	before := readDB(t, db)
	for _, args := range [][]string{
		{"attention"}, {"status", "--open"}, {"reap"}, {"dismiss", "session:s5:run.failed.exit_nonzero"},
		{"snooze", "session:s5:run.failed.exit_nonzero"}, {"probe", "--entity", "session/s5"},
	} {
		r := rmtRun(t, work, []string{"WATCHDOG_CONFIG=" + bad}, "", append(args, "--db", db)...)
		if r.code == 0 || r.stdout != "" || strings.Count(r.stderr, "\n") != 1 ||
			!strings.Contains(r.stderr, bad) || !strings.Contains(r.stderr, "failure_widow") || strings.Contains(r.stderr, "goroutine") {
			t.Errorf("%v with an invalid config: %+v", args, r)
		}
	}
	if after := readDB(t, db); !reflect.DeepEqual(before, after) {
		t.Error("a command refused for its invalid config changed the database")
	}
}

// statusJudge reads the "judge" of `status --json` from a database.
func statusJudge(t *testing.T, r result) judgedBy {
	t.Helper()
	if r.code != 0 {
		t.Fatalf("status --json: %+v", r)
	}
	var out struct {
		Items []json.RawMessage `json:"items"`
		Judge *judgedBy         `json:"judge"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &out); err != nil || out.Judge == nil || out.Items == nil {
		t.Fatalf("status --json has no items or no judge (%v):\n%s", err, r.stdout)
	}
	return *out.Judge
}

// Observation 6: with the daemon serving the database, status and
// attention print no warning; once it stopped (and the watched process
// was killed behind its back), status --open still prints the last
// judgement, exit 0 as docs/reference/cli.md says, with one line on stderr saying no daemon
// serves the database and when one last judged it, and --json carries the
// same facts. Through --server the daemon judges: no such line.
func TestJudgeSettingsObs6StaleStateSaysWhoJudged(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "watchdog.db")
	cfg := judgeDaemonConfig(t, dir, db, "")
	env := []string{"WATCHDOG_CONFIG=" + cfg}
	work := t.TempDir()
	started := time.Now()
	d, stop := rmtServe(t, cfg, filepath.Join(dir, "serve.log"))

	sleep := testenv.Sleep(t)
	doc := fmt.Sprintf(`{"type":"session","id":"s3","lifecycle":"running","pid":%d}`, sleep.Process.Pid)
	// The writing commands take no config: the database is named.
	if r := rmtRun(t, work, nil, doc, "register", "--db", db, "--json", "-"); r.code != 0 {
		t.Fatalf("register: %+v", r)
	}
	testenv.Eventually(t, "the daemon judges s3 alive", rmtDeadline, func() (bool, string) {
		r := rmtRun(t, work, env, "", "status", "--open")
		return strings.Contains(r.stdout, "Running · Alive"), r.stdout + r.stderr
	})

	for _, args := range [][]string{{"status", "--open"}, {"attention"}} {
		if r := rmtRun(t, work, env, "", args...); r.code != 0 || r.stderr != "" {
			t.Errorf("%v while the daemon serves: %+v, want no warning", args, r)
		}
		if r := rmtRun(t, work, nil, "", append(args, "--server", d.base)...); r.code != 0 || r.stderr != "" {
			t.Errorf("%v --server: %+v, want no warning", args, r)
		}
	}
	if j := statusJudge(t, rmtRun(t, work, env, "", "status", "--open", "--json")); !j.DaemonServing || j.LastJudgedAt == nil || j.Config != cfg {
		t.Errorf("judge while the daemon serves: %+v", j)
	}

	stop()
	stopped := time.Now()
	if err := sleep.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}

	r := rmtRun(t, work, env, "", "status", "--open")
	if r.code != 0 || !strings.Contains(r.stdout, "Running · Alive") {
		t.Fatalf("status --open after the stop: %+v (the stored judgement stays, exit 0)", r)
	}
	lines := strings.Split(strings.TrimRight(r.stderr, "\n"), "\n")
	if len(lines) != 1 || !strings.HasPrefix(lines[0], "watchdog: no watchdog daemon is serving this database; last judged ") {
		t.Errorf("status --open after the stop: stderr must be the one warning line, got %q", r.stderr)
	}
	if a := rmtRun(t, work, env, "", "attention"); a.code != 0 || !strings.Contains(a.stderr, "no watchdog daemon is serving this database; last judged ") {
		t.Errorf("attention after the stop: %+v", a)
	}

	j := statusJudge(t, rmtRun(t, work, env, "", "status", "--open", "--json"))
	if j.DaemonServing || j.LastJudgedAt == nil || j.LastJudgedBy == "" || j.Config != cfg {
		t.Fatalf("judge after the stop: %+v", j)
	}
	if at := j.LastJudgedAt.Time; at.Before(started.Add(-time.Second)) || at.After(stopped.Add(time.Second)) {
		t.Errorf("last judged at %v: not while the daemon ran (%v to %v)", at, started, stopped)
	}
	var q struct {
		Judge *judgedBy `json:"judge"`
	}
	if a := rmtRun(t, work, env, "", "attention", "--json"); json.Unmarshal([]byte(a.stdout), &q) != nil || q.Judge == nil || q.Judge.DaemonServing {
		t.Errorf("attention --json after the stop: %s", a.stdout)
	}
}
