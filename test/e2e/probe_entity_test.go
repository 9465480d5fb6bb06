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
	"watchdog/probe"
	"watchdog/state"
	"watchdog/store"
)

// registerE2E registers one entity through the built binary.
func registerE2E(t *testing.T, db, doc string) {
	t.Helper()
	if r := wd(t, doc, "register", "--db", db, "--json", "-"); r.code != 0 {
		t.Fatalf("register %s: %+v", doc, r)
	}
}

// killedSleep starts a real sleep, hands its pid to register (so the
// watchdog records its start time while it lives), then kills and reaps
// it: a conclusively dead process with a recorded identity.
func killedSleep(t *testing.T, register func(pid int)) int {
	t.Helper()
	c := testenv.Sleep(t)
	pid := c.Process.Pid
	register(pid)
	if err := c.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = c.Wait()
	return pid
}

// entityOf reads one entity straight from the database file.
func entityOf(t *testing.T, db, typ, id string) store.Entity {
	t.Helper()
	for _, e := range readDB(t, db).Entities {
		if e.Type == typ && e.ID == id {
			return e
		}
	}
	t.Fatalf("no %s/%s in %s", typ, id, db)
	return store.Entity{}
}

// TestProbeEntityBinaryExitCodes drives `watchdog probe --entity` through
// every exit code with real processes and a real SQLite file.
func TestProbeEntityBinaryExitCodes(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "w.db")
	alive, _ := adhocSleep(t)
	idleHB := testenv.AgedFile(t, dir, "idle.hb", "", 20*time.Minute)

	registerE2E(t, db, fmt.Sprintf(`{"type":"session","id":"alive","lifecycle":"running","pid":%d}`, alive))
	registerE2E(t, db, fmt.Sprintf(`{"type":"session","id":"idle","lifecycle":"running","pid":%d,"heartbeat_file":%q}`, alive, idleHB))
	dead := killedSleep(t, func(pid int) {
		registerE2E(t, db, fmt.Sprintf(`{"type":"session","id":"dead","lifecycle":"running","pid":%d}`, pid))
	})
	registerE2E(t, db, `{"type":"session","id":"nopid","lifecycle":"running"}`)
	registerE2E(t, db, `{"type":"session","id":"failed","lifecycle":"running"}`)
	if r := wd(t, "", "transition", "session/failed", "failed", "--reason", "run.failed.exit_nonzero", "--actor", "orchestrator", "--db", db); r.code != 0 {
		t.Fatalf("transition: %+v", r)
	}
	// A first registration starts the state's clock (issue 23, observation
	// 3): "idle" is made to have been registered before its heartbeat
	// file's last touch, 30 minutes ago, so that the file's age counts.
	if _, err := testenv.SQL(t, db).Exec("UPDATE entities SET created_at = created_at - 1800, lifecycle_at = lifecycle_at - 1800 WHERE id = 'idle'"); err != nil {
		t.Fatal(err)
	}

	for _, tc := range []struct {
		name  string
		ref   string
		code  int
		first string
		more  string // a later line of the output
	}{
		{"0: alive", "session/alive", 0, "INFO - Running · Alive", fmt.Sprintf("evidence: pid %d alive", alive)},
		{"1: idle heartbeat", "session/idle", 1, "WARNING - Running · Idle", "reason run.health.idle"},
		{"2: killed process", "session/dead", 2, "CRITICAL - Running · Process dead", fmt.Sprintf("evidence: pid %d not running", dead)},
		{"2: failed, alias type", "run/failed", 2, "CRITICAL - Failed", "reason run.failed.exit_nonzero"},
		{"3: no pid, no heartbeat", "session/nopid", 3, "UNKNOWN - Running · Health unknown", "reason run.health.liveness_unknown"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := wd(t, "", "probe", "--entity", tc.ref, "--record", "--db", db)
			if r.code != tc.code || !onlyJudgeLines(r.stderr) {
				t.Fatalf("exit %d (want %d), stderr %q\n%s", r.code, tc.code, r.stderr, r.stdout)
			}
			if !strings.HasPrefix(r.stdout, tc.first) || !strings.Contains(r.stdout, tc.more) {
				t.Errorf("stdout %q; want first line %q and %q", r.stdout, tc.first, tc.more)
			}
		})
	}

	// --json prints the NormalizedState, and exits the same way.
	r := wd(t, "", "probe", "--entity", "session/dead", "--db", db, "--json")
	var ns state.NormalizedState
	if r.code != 2 || json.Unmarshal([]byte(r.stdout), &ns) != nil || ns.Health != state.HealthProcessDead || ns.Severity != state.SeverityCritical || ns.Lifecycle != "running" {
		t.Fatalf("--json: exit %d, state %+v, stdout %s", r.code, ns, r.stdout)
	}

	// What was probed with --record is stored: the daemon, status and the
	// reaper see it.
	if e := entityOf(t, db, "session", "dead"); e.Health != state.HealthProcessDead || e.DeadSince.IsZero() {
		t.Errorf("stored dead: health %s dead_since %v", e.Health, e.DeadSince)
	}
	if e := entityOf(t, db, "session", "alive"); e.Health != state.HealthRunning || !e.DeadSince.IsZero() {
		t.Errorf("stored alive: health %s dead_since %v", e.Health, e.DeadSince)
	}
}

// A probe of an unchanged entity writes nothing: not a column, not
// updated_at, not an audit row.
func TestProbeEntityUnchangedWritesNothing(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "w.db")
	alive, _ := adhocSleep(t)
	registerE2E(t, db, fmt.Sprintf(`{"type":"session","id":"alive","lifecycle":"running","pid":%d}`, alive))
	killedSleep(t, func(pid int) {
		registerE2E(t, db, fmt.Sprintf(`{"type":"session","id":"dead","lifecycle":"running","pid":%d}`, pid))
	})

	for _, id := range []string{"alive", "dead"} {
		registered := readDB(t, db)
		// Without --record nothing at all is written, changed or not.
		if r := wd(t, "", "probe", "--entity", "session/"+id, "--db", db); !strings.Contains(r.stdout, "not recorded") {
			t.Fatalf("%s: read-only probe of a changed entity: %+v", id, r)
		}
		if after := readDB(t, db); !reflect.DeepEqual(registered, after) {
			t.Fatalf("%s: a read-only probe wrote to the database", id)
		}
		first := wd(t, "", "probe", "--entity", "session/"+id, "--record", "--db", db)
		if !strings.Contains(first.stdout, "recorded: health") {
			t.Fatalf("%s: first probe recorded nothing: %+v", id, first)
		}
		probed := readDB(t, db)
		if reflect.DeepEqual(registered, probed) {
			t.Fatalf("%s: first probe wrote nothing", id)
		}
		if !reflect.DeepEqual(registered.Rows, probed.Rows) {
			t.Errorf("%s: a probe wrote an audit row", id)
		}
		// Ages in the evidence move on; what is stored must not.
		time.Sleep(1100 * time.Millisecond)
		second := wd(t, "", "probe", "--entity", "session/"+id, "--record", "--db", db)
		if second.code != first.code || strings.Contains(second.stdout, "recorded:") {
			t.Errorf("%s: second probe exit %d (first %d), stdout %q", id, second.code, first.code, second.stdout)
		}
		if after := readDB(t, db); !reflect.DeepEqual(probed, after) {
			t.Errorf("%s: probing an unchanged entity wrote to the database", id)
		}
	}
}

// --config supplies the thresholds (and the database, via store.dsn).
func TestProbeEntityConfig(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "w.db")
	alive, _ := adhocSleep(t)
	hb := testenv.AgedFile(t, dir, "s.hb", "", 5*time.Second)
	registerE2E(t, db, fmt.Sprintf(`{"type":"session","id":"s","lifecycle":"running","pid":%d,"heartbeat_file":%q}`, alive, hb))
	cfg := writeFile(t, dir, "cfg.yaml", fmt.Sprintf("store:\n  dsn: %s\nthresholds:\n  idle_after: 1s\n  stalled_after: 2s\n", db))
	// Its state's clock started at registration: registered a minute ago.
	if _, err := testenv.SQL(t, db).Exec("UPDATE entities SET created_at = created_at - 60, lifecycle_at = lifecycle_at - 60 WHERE id = 's'"); err != nil {
		t.Fatal(err)
	}

	// No --db: the config's store.dsn is the database.
	r := wd(t, "", "probe", "--entity", "session/s", "--record", "--config", cfg)
	if r.code != 2 || !strings.HasPrefix(r.stdout, "CRITICAL - Running · Stalled") {
		t.Fatalf("with a 2s stalled_after: %+v", r)
	}
	if e := entityOf(t, db, "session", "s"); e.Health != state.HealthStalled {
		t.Errorf("stored health %s, want stalled", e.Health)
	}
}

func TestProbeEntityBadInput(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "w.db")
	alive, _ := adhocSleep(t)
	registerE2E(t, db, fmt.Sprintf(`{"type":"session","id":"remote","lifecycle":"running","pid":%d,"host_id":"another-host"}`, alive))
	registerE2E(t, db, `{"type":"session","id":"old","lifecycle":null}`)
	registerE2E(t, db, `{"type":"schedule","id":"nightly","schedule":{"cron":"@daily"}}`)
	badCfg := writeFile(t, dir, "bad.yaml", "thresholds:\n  idel_after: 1s\n")
	absentDB := filepath.Join(dir, "absent.db")

	for _, tc := range []struct {
		name string
		args []string
		msg  string
	}{
		{"another host", []string{"--entity", "session/remote", "--db", db}, "recorded on another host (another-host"},
		{"not registered", []string{"--entity", "session/nope", "--db", db}, "no entity session/nope"},
		{"legacy", []string{"--entity", "session/old", "--db", db}, "legacy entity"},
		{"schedule", []string{"--entity", "schedule/nightly", "--db", db}, "schedules are judged by their cron spec"},
		{"bad ref", []string{"--entity", "session", "--db", db}, "is not TYPE/ID"},
		{"unknown type", []string{"--entity", "widget/w", "--db", db}, `unknown entity type "widget"`},
		{"no database", []string{"--entity", "session/remote", "--db", absentDB}, "no database at"},
		{"missing config", []string{"--entity", "session/remote", "--db", db, "--config", filepath.Join(dir, "absent.yaml")}, "no such file"},
		{"bad config", []string{"--entity", "session/remote", "--db", db, "--config", badCfg}, "idel_after"},
		{"thresholds by flag", []string{"--entity", "session/remote", "--db", db, "--idle-after", "1m"}, "from --config"},
		{"db without entity", []string{"--pid", fmt.Sprint(alive), "--db", db}, "go with --entity"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := readDB(t, db)
			r := wd(t, "", append([]string{"probe"}, tc.args...)...)
			assertOneLineError(t, r)
			if r.code != probe.ExitUnknown || r.stdout != "" || !strings.Contains(r.stderr, "watchdog: probe: ") || !strings.Contains(r.stderr, tc.msg) {
				t.Errorf("exit %d, stdout %q, stderr %q; want exit 3 and %q", r.code, r.stdout, r.stderr, tc.msg)
			}
			if after := readDB(t, db); !reflect.DeepEqual(before, after) {
				t.Error("a refused probe changed the database")
			}
		})
	}
	if _, err := os.Stat(absentDB); err == nil {
		t.Error("probe --entity created a database file")
	}
	// The other host's pid is alive here, and still it was not judged.
	if e := entityOf(t, db, "session", "remote"); e.Health == state.HealthRunning {
		t.Error("another host's entity was probed")
	}
}
