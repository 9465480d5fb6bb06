package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"watchdog/internal/testenv"
	"watchdog/store"
	"watchdog/store/sqlite"
	"watchdog/wire"
)

// execEntity reads the one entity exec recorded under id (of any type),
// with its audit rows.
func execEntity(t *testing.T, db, id string) (store.Entity, []store.AuditRow) {
	t.Helper()
	st, err := sqlite.Open(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	list, err := st.List(context.Background(), store.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	var e store.Entity
	for _, x := range list {
		if x.ID == id {
			e = x
		}
	}
	if e.ID == "" {
		t.Fatalf("no entity with id %s", id)
	}
	rows, err := st.Transitions(context.Background(), e.Type, id)
	if err != nil {
		t.Fatal(err)
	}
	return e, rows
}

func lastRow(t *testing.T, rows []store.AuditRow) store.AuditRow {
	t.Helper()
	if len(rows) == 0 {
		t.Fatal("no audit rows")
	}
	return rows[len(rows)-1]
}

// TestExecExitMapping runs the built binary around real commands and checks
// each end of the exit mapping (docs/reference/state-model.md, Exit codes): the stored terminal state, its reason
// code, the audit row written by the exec actor, and exec's own exit code.
func TestExecExitMapping(t *testing.T) {
	cases := []struct {
		name     string
		flags    []string
		cmd      []string
		wantCode int
		wantTo   string
		wantWhy  string
	}{
		{"exit 0", nil, []string{"sh", "-c", "exit 0"}, 0, "completed", "run.completed.exit_zero"},
		{"exit 3", nil, []string{"sh", "-c", "exit 3"}, 3, "failed", "run.failed.exit_nonzero"},
		{"exit 124 with a timeout", []string{"--timeout", "1h"}, []string{"sh", "-c", "exit 124"}, 124, "timed_out", "run.timed_out.deadline"},
		{"exit 124 without a timeout", nil, []string{"sh", "-c", "exit 124"}, 124, "timed_out", "run.timed_out.deadline"},
		{"workflow exit 124 without a timeout", []string{"--type", "workflow"}, []string{"sh", "-c", "exit 124"}, 124, "failed", "run.failed.exit_nonzero"},
		{"exit 130", nil, []string{"sh", "-c", "exit 130"}, 130, "cancelled", "run.cancelled.sigint"},
		{"exit 143", nil, []string{"sh", "-c", "exit 143"}, 143, "cancelled", "run.cancelled.sigterm"},
		{"killed by SIGTERM", nil, []string{"sh", "-c", "kill -TERM $$"}, 143, "cancelled", "run.cancelled.sigterm"},
		{"killed by SIGKILL", nil, []string{"sh", "-c", "kill -KILL $$"}, 137, "failed", "run.failed.signal"},
		{"workflow killed by SIGTERM", []string{"--type", "workflow"}, []string{"sh", "-c", "kill -TERM $$"}, 143, "cancelled", "run.cancelled.sigterm"},
		{"timeout", []string{"--timeout", "1s"}, []string{"sleep", "30"}, 124, "timed_out", "run.timed_out.deadline"},
		{"timeout, SIGTERM ignored, then SIGKILL", []string{"--timeout", "1s", "--kill-after", "300ms"},
			[]string{"sh", "-c", `trap "" TERM; exec sleep 30`}, 124, "timed_out", "run.timed_out.deadline"},
	}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			db := filepath.Join(t.TempDir(), "w.db")
			id := "x-" + strconv.Itoa(i)
			args := append([]string{"exec", "--db", db, "--id", id}, c.flags...)
			r := wd(t, "", append(append(args, "--"), c.cmd...)...)
			if r.code != c.wantCode {
				t.Fatalf("exit %d, want %d (stderr %q)", r.code, c.wantCode, r.stderr)
			}
			e, rows := execEntity(t, db, id)
			if got := e.LifecycleOr(""); got != c.wantTo {
				t.Errorf("lifecycle %s, want %s", got, c.wantTo)
			}
			if len(rows) != 2 {
				t.Fatalf("%d audit rows, want registration + one terminal: %+v", len(rows), rows)
			}
			last := lastRow(t, rows)
			if last.From == nil || *last.From != "running" || last.To != c.wantTo || string(last.ReasonCode) != c.wantWhy || last.Actor != "exec" {
				t.Errorf("terminal row %v->%s %s by %s, want running->%s %s by exec", last.From, last.To, last.ReasonCode, last.Actor, c.wantTo, c.wantWhy)
			}
			if strings.HasPrefix(c.name, "killed by SIG") && !strings.Contains(last.Message, c.name) {
				t.Errorf("message %q does not say %q", last.Message, c.name)
			}
			// The exit status exec saw is the entity's (issue 39: it was
			// null), a code or the signal that killed the child.
			switch {
			case e.Exit == nil:
				t.Errorf("no exit status on the entity, want the one exec saw")
			case strings.HasPrefix(c.name, "killed by SIG") && !e.Exit.Killed():
				t.Errorf("exit status %+v, want killed by a signal", *e.Exit)
			case strings.HasPrefix(c.name, "exit ") && !strings.HasPrefix(c.name, "exit 124 with") && (e.Exit.Killed() || e.Exit.Code != c.wantCode):
				t.Errorf("exit status %+v, want code %d", *e.Exit, c.wantCode)
			}
			if c.wantTo == "timed_out" {
				// The configured timeout is recorded when exec was given
				// one; the elapsed time always.
				given := slices.Contains(c.flags, "--timeout")
				if (e.Timeout > 0) != given || e.TimeoutElapsed <= 0 {
					t.Errorf("timed_out evidence: timeout %v (given: %v) elapsed %v", e.Timeout, given, e.TimeoutElapsed)
				}
			}
			// Judged at once, as the daemon would: the process is gone, as
			// an ended run's should be.
			if e.Health != "ok" {
				t.Errorf("health %s after the end, want ok", e.Health)
			}
			// Even a child that is gone before it is registered (exit 0
			// at once) has its start time recorded: it is exec's zombie
			// until exec reaps it.
			if e.PID <= 0 || e.SupervisorPID <= 0 || !e.PIDStartTime.After(unixAt(0)) {
				t.Errorf("pid %d start %v supervisor %d: exec must record all three", e.PID, e.PIDStartTime, e.SupervisorPID)
			}
		})
	}
}

// TestExecForwardsSignals sends SIGINT, SIGTERM and SIGQUIT to the exec
// process (as systemd or a terminal would) and checks the child got them:
// its end is recorded as cancelled/cancelled/failed and exec exits
// 130/143/131. SIGQUIT must reach the child, not make the Go runtime dump
// exec's goroutines. While it runs, the
// registered pid is the live child with its start time, and the
// supervisor is exec itself.
func TestExecForwardsSignals(t *testing.T) {
	for _, c := range []struct {
		sig      syscall.Signal
		wantCode int
		wantTo   string
	}{
		{syscall.SIGINT, 130, "cancelled"},
		{syscall.SIGTERM, 143, "cancelled"},
		{syscall.SIGQUIT, 131, "failed"},
	} {
		t.Run(c.sig.String(), func(t *testing.T) {
			db := filepath.Join(t.TempDir(), "w.db")
			cmd := exec.Command(binPath, "exec", "--db", db, "--id", "sig", "--", "sleep", "60")
			var errb testenv.Buffer
			cmd.Stderr = &errb
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = cmd.Process.Kill() })
			var e store.Entity
			testenv.Eventually(t, "exec to register the entity", ceiling, func() (bool, string) {
				if _, err := os.Stat(db); err == nil {
					if st, err := sqlite.Open(context.Background(), db); err == nil {
						e, err = st.Get(context.Background(), "session", "sig")
						st.Close()
						if err == nil {
							return true, ""
						}
					}
				}
				return false, fmt.Sprintf("stderr %q", errb.String())
			})
			if e.LifecycleOr("") != "running" || e.SupervisorPID != cmd.Process.Pid || e.PIDStartTime.IsZero() {
				t.Fatalf("registered %s pid %d start %v supervisor %d (exec is %d)", e.LifecycleOr(""), e.PID, e.PIDStartTime, e.SupervisorPID, cmd.Process.Pid)
			}
			if comm, err := os.ReadFile("/proc/" + strconv.Itoa(e.PID) + "/comm"); err != nil || strings.TrimSpace(string(comm)) != "sleep" {
				t.Fatalf("registered pid %d is not the live sleep: %q %v", e.PID, comm, err)
			}
			if err := cmd.Process.Signal(c.sig); err != nil {
				t.Fatal(err)
			}
			err := cmd.Wait()
			ee, ok := err.(*exec.ExitError)
			if !ok || ee.ExitCode() != c.wantCode {
				t.Fatalf("exec ended with %v, want exit %d; stderr %q", err, c.wantCode, errb.String())
			}
			if strings.Contains(errb.String(), "goroutine") {
				t.Errorf("exec dumped its goroutines instead of forwarding %s: %q", c.sig, errb.String())
			}
			e, rows := execEntity(t, db, "sig")
			if e.LifecycleOr("") != c.wantTo || len(rows) != 2 {
				t.Errorf("lifecycle %s with %d rows, want %s with 2", e.LifecycleOr(""), len(rows), c.wantTo)
			}
			if err := syscall.Kill(e.PID, 0); err == nil {
				t.Errorf("child %d still alive after exec returned", e.PID)
			}
		})
	}
}

// TestExecArtifactContract: a successful exit with the contract met is
// completed; with a required artifact missing it is failed with
// run.failed.artifact_contract and the missing file as evidence, while exec
// still exits with the child's 0 and says why on stderr.
func TestExecArtifactContract(t *testing.T) {
	dir := t.TempDir()
	root := filepath.Join(dir, "runs")
	if err := os.Mkdir(root, 0o755); err != nil {
		t.Fatal(err)
	}
	db := filepath.Join(dir, "w.db")

	r := wd(t, "", "exec", "--db", db, "--id", "ok", "--artifacts-root", root, "--artifact", "review.md", "--",
		"sh", "-c", "echo done > "+filepath.Join(root, "review.md"))
	if r.code != 0 || r.stderr != "" {
		t.Fatalf("contract met: exit %d stderr %q", r.code, r.stderr)
	}
	if e, _ := execEntity(t, db, "ok"); e.LifecycleOr("") != "completed" || e.ArtifactsRoot != root || len(e.Artifacts) != 1 || e.Delivery != "passed" {
		t.Errorf("contract met: %s, root %q, %d artifacts, delivery %s", e.LifecycleOr(""), e.ArtifactsRoot, len(e.Artifacts), e.Delivery)
	}

	contract := writeFile(t, dir, "contract.yaml", "artifacts:\n  - path: report.json\n    kind: json\n")
	r = wd(t, "", "exec", "--db", db, "--id", "missing", "--artifacts-root", root, "--contract", contract, "--", "true")
	if r.code != 0 {
		t.Fatalf("exit %d: exec keeps the child's code", r.code)
	}
	if !strings.Contains(r.stderr, "artifact contract failed") || !strings.Contains(r.stderr, "report.json") {
		t.Errorf("stderr must say the contract failed and which artifact: %q", r.stderr)
	}
	e, rows := execEntity(t, db, "missing")
	last := lastRow(t, rows)
	if e.LifecycleOr("") != "failed" || last.ReasonCode != "run.failed.artifact_contract" || e.Delivery != "missing" {
		t.Fatalf("missing artifact: %s %s, delivery %s", e.LifecycleOr(""), last.ReasonCode, e.Delivery)
	}
	found := false
	for _, ev := range last.Evidence {
		if ev.Kind == "artifact" && strings.HasSuffix(ev.Path, "report.json") {
			found = true
		}
	}
	if !found {
		t.Errorf("no artifact evidence for report.json: %+v", last.Evidence)
	}

	// Many failing artifacts: the record of the end still fits the reason
	// limits (it is trimmed, saying how many were left out) instead of
	// being refused and leaving the entity running.
	args := []string{"exec", "--db", db, "--id", "many", "--artifacts-root", root}
	for i := range 60 {
		args = append(args, "--artifact", fmt.Sprintf("%s-%03d.md", strings.Repeat("long-name-", 20), i))
	}
	r = wd(t, "", append(args, "--", "true")...)
	if r.code != 0 {
		t.Fatalf("many artifacts: exit %d, stderr %q", r.code, r.stderr)
	}
	e, rows = execEntity(t, db, "many")
	last = lastRow(t, rows)
	if e.LifecycleOr("") != "failed" || last.ReasonCode != "run.failed.artifact_contract" {
		t.Fatalf("many artifacts: %s %s; stderr %q", e.LifecycleOr(""), last.ReasonCode, r.stderr)
	}
	if n := len(last.Evidence); n > wire.MaxEvidence || !strings.Contains(last.Evidence[n-1].Detail, "more, not listed") {
		t.Errorf("many artifacts: %d evidence items, the last %+v; want at most %d ending with what was left out", n, last.Evidence[n-1], wire.MaxEvidence)
	}
}

// TestExecRunsWithoutStore: an unreachable store never stops the work; exec
// says so on stderr in one line and still exits with the child's code.
func TestExecRunsWithoutStore(t *testing.T) {
	dir := t.TempDir()
	marker := filepath.Join(dir, "ran")
	for _, where := range [][]string{
		{"--db", filepath.Join(dir, "no", "such", "dir", "w.db")},
		{"--server", "http://127.0.0.1:1"},
	} {
		os.Remove(marker)
		r := wd(t, "", append(append([]string{"exec", "--id", "unwatched"}, where...), "--", "sh", "-c", "touch "+marker+"; exit 7")...)
		if r.code != 7 {
			t.Errorf("%v: exit %d, want the child's 7 (stderr %q)", where, r.code, r.stderr)
		}
		if _, err := os.Stat(marker); err != nil {
			t.Errorf("%v: the command did not run", where)
		}
		if lines := strings.Split(strings.TrimSpace(r.stderr), "\n"); len(lines) != 1 || !strings.Contains(lines[0], "not watched") {
			t.Errorf("%v: want one stderr line saying it is not watched, got %q", where, r.stderr)
		}
	}
}

// TestExecBadInputRunsNothing: a mistake in exec's own arguments is one
// line, exit 125 (never one of the child's codes), no database, and the
// command is not started.
func TestExecBadInputRunsNothing(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "w.db")
	marker := filepath.Join(dir, "ran")
	run := []string{"--", "touch", marker}
	badContract := writeFile(t, dir, "bad.yaml", "artifacts:\n  - path: ../escape\n    kindd: file\n")
	for _, c := range []struct {
		name string
		args []string
		code int
	}{
		{"bad id", []string{"--id", "no spaces allowed"}, 125},
		{"unknown type", []string{"--type", "spaceship"}, 125},
		{"type without running", []string{"--type", "team"}, 125},
		{"bad contract", []string{"--contract", badContract}, 125},
		{"missing contract", []string{"--contract", filepath.Join(dir, "nope.yaml")}, 125},
		{"unknown flag", []string{"--frobnicate"}, 125},
		{"bad duration", []string{"--timeout", "soon"}, 125},
		{"root without artifacts", []string{"--artifacts-root", dir}, 125},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := wd(t, "", append(append([]string{"exec", "--db", db}, c.args...), run...)...)
			if r.code != c.code {
				t.Errorf("exit %d, want %d", r.code, c.code)
			}
			assertOneLineError(t, r)
			if _, err := os.Stat(marker); err == nil {
				t.Error("the command ran")
			}
			if _, err := os.Stat(db); err == nil {
				t.Error("a database was created")
			}
		})
	}
	r := wd(t, "", "exec", "--db", db, "--", filepath.Join(dir, "no-such-command"))
	if r.code != 127 {
		t.Errorf("missing command: exit %d, want 127", r.code)
	}
	assertOneLineError(t, r)
}

// TestExecTakesOverOnlyWorkThatHasNotStarted: an entity registered ahead
// (pending) is run by exec under its id; ended or running work keeps its
// id, and exec refuses before the command runs, changing nothing.
func TestExecTakesOverOnlyWorkThatHasNotStarted(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "w.db")
	marker := filepath.Join(dir, "ran")
	for _, body := range []string{
		`{"type":"session","id":"ahead"}`,
		`{"type":"session","id":"done","lifecycle":"completed"}`,
		`{"type":"session","id":"busy","lifecycle":"running"}`,
		`{"type":"session","id":"old","lifecycle":null}`,
	} {
		if r := wd(t, body, "register", "--db", db, "--json", "-"); r.code != 0 {
			t.Fatalf("register %s: %s", body, r.stderr)
		}
	}
	r := wd(t, "", "exec", "--db", db, "--id", "ahead", "--", "true")
	if r.code != 0 {
		t.Fatalf("pending entity: exit %d %q", r.code, r.stderr)
	}
	e, rows := execEntity(t, db, "ahead")
	var path []string
	for _, row := range rows {
		path = append(path, row.To)
	}
	if e.LifecycleOr("") != "completed" || strings.Join(path, ",") != "pending,running,completed" || e.PID <= 0 {
		t.Errorf("pending entity run by exec: %s via %v, pid %d", e.LifecycleOr(""), path, e.PID)
	}

	before := readDB(t, db)
	for _, id := range []string{"done", "busy", "old"} {
		r := wd(t, "", "exec", "--db", db, "--id", id, "--", "touch", marker)
		if r.code != 125 {
			t.Errorf("%s: exit %d, want 125", id, r.code)
		}
		assertOneLineError(t, r)
		if _, err := os.Stat(marker); err == nil {
			t.Fatalf("%s: the command ran", id)
		}
	}
	if after := readDB(t, db); !reflect.DeepEqual(before, after) {
		t.Error("a refused exec changed the database")
	}
}

// TestExecHostID: WATCHDOG_HOST_ID gives the command line the host id the
// daemon's config sets, so what exec registers is this daemon's to sweep.
func TestExecHostID(t *testing.T) {
	db := filepath.Join(t.TempDir(), "w.db")
	cmd := exec.Command(binPath, "exec", "--db", db, "--id", "h", "--", "true")
	cmd.Env = append(os.Environ(), "WATCHDOG_HOST_ID=rack-7-host-3")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if e, _ := execEntity(t, db, "h"); e.HostID != "rack-7-host-3" {
		t.Errorf("host id %q", e.HostID)
	}
}
