package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"watchdog/internal/testenv"
	"watchdog/reaper"
	"watchdog/state"
)

// waitGrace polls until the recorded death of typ/id is older than grace:
// the wall clock is the only clock the binary has.
func waitGrace(t *testing.T, db, typ, id string, grace time.Duration) {
	t.Helper()
	e := entityOf(t, db, typ, id)
	if e.DeadSince.IsZero() {
		t.Fatalf("%s/%s has no recorded death", typ, id)
	}
	until := e.DeadSince.Add(grace + 50*time.Millisecond)
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(until) {
		if time.Now().After(deadline) {
			t.Fatalf("grace of %s/%s never ran out", typ, id)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func lifecycleOf(t *testing.T, db, typ, id string) string {
	t.Helper()
	return entityOf(t, db, typ, id).LifecycleOr("legacy")
}

// reapWorld is a store holding one of everything reap must tell apart.
type reapWorld struct {
	dir, db, cfg string
	early, late  int // pids of killed sleeps
}

// newReapWorld registers, on a real SQLite file: alive (a live sleep),
// nopid (liveness unknown), remote (another host's entity whose pid is
// dead here), early (a killed sleep whose death `probe --entity` recorded)
// and late (a killed sleep no probe has seen die).
func newReapWorld(t *testing.T, grace string) reapWorld {
	t.Helper()
	w := reapWorld{dir: t.TempDir()}
	w.db = filepath.Join(w.dir, "w.db")
	w.cfg = writeFile(t, w.dir, "cfg.yaml", "thresholds:\n  terminal_grace: "+grace+"\n")
	alive, _ := adhocSleep(t)
	registerE2E(t, w.db, fmt.Sprintf(`{"type":"session","id":"alive","lifecycle":"running","pid":%d}`, alive))
	registerE2E(t, w.db, `{"type":"session","id":"nopid","lifecycle":"running"}`)
	registerE2E(t, w.db, fmt.Sprintf(`{"type":"session","id":"remote","lifecycle":"running","pid":%d,"host_id":"another-host"}`, testenv.DeadPID(t)))
	w.early = killedSleep(t, func(pid int) {
		registerE2E(t, w.db, fmt.Sprintf(`{"type":"session","id":"early","lifecycle":"running","pid":%d}`, pid))
	})
	w.late = killedSleep(t, func(pid int) {
		registerE2E(t, w.db, fmt.Sprintf(`{"type":"invocation","id":"late","lifecycle":"running","pid":%d}`, pid))
	})
	if r := wd(t, "", "probe", "--entity", "session/early", "--record", "--db", w.db); r.code != 2 {
		t.Fatalf("probe early: %+v", r)
	}
	return w
}

// assertUntouched checks that reap never ended what it must not: a live
// process, an unknown liveness, another host's entity.
func (w reapWorld) assertUntouched(t *testing.T) {
	t.Helper()
	for _, ref := range [][2]string{{"session", "alive"}, {"session", "nopid"}, {"session", "remote"}} {
		if got := lifecycleOf(t, w.db, ref[0], ref[1]); got != "running" {
			t.Errorf("%s/%s is %s: reap must never end it", ref[0], ref[1], got)
		}
	}
}

func TestReapDryRunWritesNothing(t *testing.T) {
	w := newReapWorld(t, "1s")
	waitGrace(t, w.db, "session", "early", time.Second)

	before := readDB(t, w.db)
	r := wd(t, "", "reap", "--dry-run", "--db", w.db, "--config", w.cfg)
	if r.code != 0 || r.stderr != "" {
		t.Fatalf("dry run: %+v", r)
	}
	want := fmt.Sprintf("would end session/early: running -> aborted (system.health.process_dead_no_terminal): pid %d not running", w.early)
	lines := strings.Split(strings.TrimRight(r.stdout, "\n"), "\n")
	// The dry run probes too: late's death, which no probe recorded, is
	// listed with its fate, as a real run would list it.
	waiting := "waiting invocation/late (would end it in failed): process first seen dead by this run"
	if len(lines) != 3 || !strings.HasPrefix(lines[0], want) || !strings.HasPrefix(lines[1], waiting) ||
		lines[2] != "dry run: 1 would change, 0 would be flagged, 1 dead and waiting; 5 entities probed; nothing written" {
		t.Errorf("dry run output:\n%s\nwant the lines %q, %q and the summary", r.stdout, want, waiting)
	}
	if after := readDB(t, w.db); !reflect.DeepEqual(before, after) {
		t.Fatal("reap --dry-run changed the database (entities or audit log)")
	}

	// The same as JSON: nothing applied.
	r = wd(t, "", "reap", "--dry-run", "--json", "--db", w.db, "--config", w.cfg)
	var res reaper.OnceReport
	if r.code != 0 || json.Unmarshal([]byte(r.stdout), &res) != nil {
		t.Fatalf("dry run --json: %+v", r)
	}
	if !res.DryRun || len(res.Actions) != 1 || res.Actions[0].ID != "early" || res.Actions[0].Applied || res.Probed != 5 {
		t.Errorf("dry run JSON %+v", res)
	}
	if after := readDB(t, w.db); !reflect.DeepEqual(before, after) {
		t.Fatal("reap --dry-run --json changed the database")
	}

	// reaper.dry_run in the config is a dry run too.
	dryCfg := writeFile(t, w.dir, "dry.yaml", "thresholds:\n  terminal_grace: 1s\nreaper:\n  dry_run: true\n")
	if r := wd(t, "", "reap", "--db", w.db, "--config", dryCfg); r.code != 0 || !strings.HasPrefix(r.stdout, "would end session/early") {
		t.Errorf("reaper.dry_run: %+v", r)
	}
	if after := readDB(t, w.db); !reflect.DeepEqual(before, after) {
		t.Fatal("reaper.dry_run: true changed the database")
	}
	w.assertUntouched(t)
}

func TestReapEndsDeadAfterGrace(t *testing.T) {
	w := newReapWorld(t, "1s")
	waitGrace(t, w.db, "session", "early", time.Second)

	// First run: ends early (dead, recorded, past its grace), and records
	// late's death without ending it.
	started := float64(time.Now().UnixNano()) / 1e9
	r := wd(t, "", "reap", "--db", w.db, "--config", w.cfg)
	if r.code != 0 || r.stderr != "" {
		t.Fatalf("reap: %+v", r)
	}
	for _, want := range []string{
		fmt.Sprintf("ended session/early: running -> aborted (system.health.process_dead_no_terminal): pid %d not running", w.early),
		"waiting invocation/late (would end it in failed): process first seen dead by this run: terminal_grace 1s starts now",
		"reap: 1 changed, 0 lost to a racing writer, 0 flagged, 1 dead and waiting;",
	} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("stdout lacks %q:\n%s", want, r.stdout)
		}
	}
	early := entityOf(t, w.db, "session", "early")
	if early.LifecycleOr("") != "aborted" || early.TransitionReason == nil || early.TransitionReason.Code != state.SystemHealthProcessDeadNoTerminal {
		t.Fatalf("early: %s %+v", early.LifecycleOr(""), early.TransitionReason)
	}
	rows := readDB(t, w.db).Rows["session/early"]
	last := rows[len(rows)-1]
	if last.Actor != "reaper" || last.To != "aborted" || last.ReasonCode != string(state.SystemHealthProcessDeadNoTerminal) ||
		len(last.Evidence) == 0 || !strings.Contains(last.Evidence[0].Detail, fmt.Sprintf("pid %d not running", w.early)) {
		t.Errorf("audit row %+v", last)
	}
	late := entityOf(t, w.db, "invocation", "late")
	if late.LifecycleOr("") != "running" || late.Health != state.HealthProcessDead || late.DeadSince.Before(unixAt(started)) {
		t.Fatalf("late: %s %s dead_since %v (run started %v): its death is recorded now and waits", late.LifecycleOr(""), late.Health, late.DeadSince, started)
	}
	w.assertUntouched(t)

	// After late's grace, the next run ends it (an invocation fails).
	waitGrace(t, w.db, "invocation", "late", time.Second)
	r = wd(t, "", "reap", "--db", w.db, "--config", w.cfg)
	if r.code != 0 || !strings.Contains(r.stdout, fmt.Sprintf("ended invocation/late: running -> failed (system.health.process_dead_no_terminal): pid %d not running", w.late)) {
		t.Fatalf("second reap: %+v", r)
	}
	w.assertUntouched(t)

	// Nothing left to do: a third run changes nothing and writes nothing.
	before := readDB(t, w.db)
	r = wd(t, "", "reap", "--db", w.db, "--config", w.cfg)
	if r.code != 0 || !strings.HasPrefix(r.stdout, "reap: 0 changed, 0 lost to a racing writer, 0 flagged, 0 dead and waiting;") {
		t.Fatalf("third reap: %+v", r)
	}
	if after := readDB(t, w.db); !reflect.DeepEqual(before, after) {
		t.Error("a reap with nothing to do wrote to the database")
	}
	if rows := readDB(t, w.db).Rows["session/early"]; len(rows) != 2 {
		t.Errorf("early has %d audit rows, want registration + one end", len(rows))
	}
}

// With a grace of a millisecond, only the order of the run (act on deaths
// recorded before, then probe) keeps a first reap from ending a death it
// discovers itself.
func TestReapDoesNotEndTheDeathItDiscovers(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "w.db")
	cfg := writeFile(t, dir, "cfg.yaml", "thresholds:\n  terminal_grace: 1ms\n")
	pid := killedSleep(t, func(pid int) {
		registerE2E(t, db, fmt.Sprintf(`{"type":"session","id":"s","lifecycle":"running","pid":%d}`, pid))
	})
	r := wd(t, "", "reap", "--db", db, "--config", cfg)
	if r.code != 0 || !strings.Contains(r.stdout, "waiting session/s (would end it in aborted): process first seen dead by this run") || strings.Contains(r.stdout, "ended") {
		t.Fatalf("first reap: %+v", r)
	}
	if e := entityOf(t, db, "session", "s"); e.LifecycleOr("") != "running" || e.DeadSince.IsZero() {
		t.Fatalf("after the first reap: %s dead_since %v", e.LifecycleOr(""), e.DeadSince)
	}
	r = wd(t, "", "reap", "--db", db, "--config", cfg)
	if r.code != 0 || !strings.Contains(r.stdout, fmt.Sprintf("ended session/s: running -> aborted (system.health.process_dead_no_terminal): pid %d", pid)) {
		t.Fatalf("second reap: %+v", r)
	}
}

func TestReapBadInput(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "w.db")
	registerE2E(t, db, `{"type":"session","id":"s","lifecycle":"running"}`)
	absent := filepath.Join(dir, "absent.db")
	badCfg := writeFile(t, dir, "bad.yaml", "thresholds:\n  terminal_grace: soon\n")

	for _, tc := range []struct {
		name string
		args []string
		code int
		msg  string
	}{
		{"argument", []string{"reap", "now", "--db", db}, 2, `unknown command "now"`},
		{"unknown flag", []string{"reap", "--force", "--db", db}, 2, "unknown flag: --force"},
		{"no database", []string{"reap", "--db", absent}, 1, "no database at"},
		{"missing config", []string{"reap", "--db", db, "--config", filepath.Join(dir, "absent.yaml")}, 1, "no such file"},
		{"bad config", []string{"reap", "--db", db, "--config", badCfg}, 1, "terminal_grace"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := readDB(t, db)
			r := wd(t, "", tc.args...)
			assertOneLineError(t, r)
			if r.code != tc.code || r.stdout != "" || !strings.Contains(r.stderr, tc.msg) {
				t.Errorf("exit %d (want %d), stdout %q, stderr %q; want %q", r.code, tc.code, r.stdout, r.stderr, tc.msg)
			}
			if after := readDB(t, db); !reflect.DeepEqual(before, after) {
				t.Error("a refused reap changed the database")
			}
		})
	}
	if _, err := os.Stat(absent); err == nil {
		t.Error("reap created a database file")
	}
}
