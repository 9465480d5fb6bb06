package e2e

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"watchdog/internal/testenv"
	"watchdog/state"
	"watchdog/wire"
)

// execWhere is where exec records, as a user reaches it: this host's
// database (--db), or a real daemon's API (--server, the daemon on its
// own database). The daemon's jobs are hourly: what it judges here it
// judges at the child's death (the monitor's pidfd), not by a sweep.
type execWhere struct {
	name string
	db   string     // --db FILE, or "" for the daemon
	d    *rmtDaemon // the daemon, or nil
}

func execTargets(t *testing.T) []execWhere {
	t.Helper()
	return []execWhere{
		{name: "db", db: filepath.Join(t.TempDir(), "w.db")},
		{name: "server", d: rmtStart(t, false)},
	}
}

// run runs `watchdog exec` with args (flags, --, the command) there.
func (w execWhere) run(t *testing.T, args ...string) result {
	t.Helper()
	if w.d != nil {
		return rmtRun(t, t.TempDir(), []string{"WATCHDOG_SERVER=" + w.d.base}, "", append([]string{"exec"}, args...)...)
	}
	return wd(t, "", append([]string{"exec", "--db", w.db}, args...)...)
}

// entity reads the session id through `watchdog status --json`, as an
// operator would.
func (w execWhere) entity(t *testing.T, id string) wire.Entity {
	t.Helper()
	var r result
	if w.d != nil {
		r = rmtRun(t, t.TempDir(), nil, "", "status", "--json", "--server", w.d.base)
	} else {
		r = wd(t, "", "status", "--json", "--db", w.db)
	}
	if r.code != 0 {
		t.Fatalf("status --json: exit %d: %s", r.code, r.stderr)
	}
	var list wire.EntityList
	if err := json.Unmarshal([]byte(r.stdout), &list); err != nil {
		t.Fatalf("status --json: %v\n%s", err, r.stdout)
	}
	for _, e := range list.Items {
		if e.Type == "session" && e.ID == id {
			return e
		}
	}
	t.Fatalf("status --json has no session/%s: %s", id, r.stdout)
	return wire.Entity{}
}

// reason is e's reason with code, or nil.
func reason(e wire.Entity, code state.ReasonCode) *state.StateReason {
	for i, r := range e.State.Reasons {
		if r.Code == code {
			return &e.State.Reasons[i]
		}
	}
	return nil
}

// startTicks is pid's start in clock ticks (field 22 of its stat), 0 when
// it is gone or a zombie.
func startTicks(pid int) uint64 {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0
	}
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+2:])
	if len(f) < 20 || f[0] == "Z" {
		return 0
	}
	n, _ := strconv.ParseUint(f[19], 10, 64)
	return n
}

// untilSleep waits, in the child's script, until the grandchild whose pid
// is in $PIDFILE runs sleep: until then it may still be setsid (or the
// subshell), and exec names a leftover by what it runs when it ends it.
const untilSleep = `while [ "$(cat /proc/$(cat "$PIDFILE")/comm 2>/dev/null)" != sleep ]; do sleep 0.01; done`

// leftoverPID reads the pid a child wrote to file (its grandchild's).
func leftoverPID(t *testing.T, file string) int {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatalf("the child wrote no pid: %v", err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	return pid
}

// TestExecEndsLeftovers: a job whose grandchild outlives it, in a real
// process tree. The grandchild (a sleep started in the background, in a
// session of its own, or by a double fork that leaves it to exec, the
// subreaper) is ended by exec before it records the end, SIGTERM, or
// SIGKILL after --kill-after when it ignores SIGTERM; the end says so and
// names it; nothing is left for the leftover finding.
func TestExecEndsLeftovers(t *testing.T) {
	cases := []struct {
		name, script, signal string
		flags                []string
	}{
		{"background job", `setsid sleep 300 & echo $! > "$PIDFILE"`, "SIGTERM", nil},
		{"double fork", `(setsid sleep 300 & echo $! > "$PIDFILE")`, "SIGTERM", nil},
		{"ignores SIGTERM", `(trap '' TERM; exec setsid sleep 300) & echo $! > "$PIDFILE"`, "SIGKILL", []string{"--kill-after", "1s"}},
	}
	for _, w := range execTargets(t) {
		for i, c := range cases {
			t.Run(w.name+"/"+c.name, func(t *testing.T) {
				pidfile := filepath.Join(t.TempDir(), "pid")
				id := fmt.Sprintf("tree-%d", i)
				args := append([]string{"--id", id}, c.flags...)
				script := "PIDFILE=" + pidfile + "; " + c.script + "; " + untilSleep + "; exit 3"
				r := w.run(t, append(args, "--", "sh", "-c", script)...)
				if r.code != 3 {
					t.Fatalf("exit %d, want the child's 3 (stderr %q)", r.code, r.stderr)
				}
				// Issue 39 #10: what exec ended is said on the terminal.
				if want := "left processes behind: 1 leftover process ended by exec: sleep (" + c.signal + ")"; !strings.Contains(r.stderr, want) {
					t.Errorf("exec's stderr %q does not say %q", r.stderr, want)
				}
				pid := leftoverPID(t, pidfile)
				// exec has returned: the grandchild was ended (and reaped)
				// before that, not merely signalled.
				if st := startTicks(pid); st != 0 {
					_ = syscall.Kill(pid, syscall.SIGKILL)
					t.Fatalf("the grandchild %d still runs after exec returned", pid)
				}
				e := w.entity(t, id)
				if e.Lifecycle == nil || *e.Lifecycle != "failed" {
					t.Fatalf("lifecycle %v, want failed", e.Lifecycle)
				}
				end := reason(e, state.RunFailedExitNonzero)
				if end == nil {
					t.Fatalf("no end reason: %+v", e.State.Reasons)
				}
				want := "exit status 3; 1 leftover process ended by exec: sleep (" + c.signal + ")"
				if end.Message != want {
					t.Errorf("end message %q, want %q", end.Message, want)
				}
				var named bool
				for _, ev := range end.Evidence {
					named = named || (strings.HasPrefix(ev.ID, "pid:"+strconv.Itoa(pid)+":") && strings.Contains(ev.Detail, "ended by exec: "+c.signal))
				}
				if !named {
					t.Errorf("the end's evidence does not name pid %d as ended by %s: %+v", pid, c.signal, end.Evidence)
				}
				// A daemon that saw the child die while the grandchild still
				// ran (it ignored SIGTERM for the grace) found the leftover
				// then, truly; the end's judgement, once the daemon has it,
				// finds it gone and drops the finding.
				testenv.Eventually(t, "no leftover finding once the end is judged", ceiling, func() (bool, string) {
					f := reason(w.entity(t, id), state.RunHealthLeftoverProcesses)
					return f == nil, fmt.Sprintf("%+v", f)
				})
			})
		}
	}
}

// TestExecReportsLeftovers: with --kill-leftovers=false the grandchild
// keeps running, and exec's end says so and names it (pid and start) in
// its evidence. That evidence is exec's, a client's: it is shown, never
// acted on (issue 36), so no judgement turns it into a leftover finding of
// its own, and nothing signals the grandchild. The grandchild holds exec's
// captured stderr: exec must return all the same.
func TestExecReportsLeftovers(t *testing.T) {
	for _, w := range execTargets(t) {
		t.Run(w.name, func(t *testing.T) {
			pidfile := filepath.Join(t.TempDir(), "pid")
			r := w.run(t, "--id", "left", "--kill-leftovers=false", "--", "sh", "-c",
				`PIDFILE=`+pidfile+`; (setsid sleep 300 >/dev/null & echo $! > "$PIDFILE"); `+untilSleep)
			if r.code != 0 {
				t.Fatalf("exit %d (stderr %q)", r.code, r.stderr)
			}
			pid := leftoverPID(t, pidfile)
			ticks := startTicks(pid)
			t.Cleanup(func() {
				if startTicks(pid) == ticks {
					_ = syscall.Kill(pid, syscall.SIGKILL)
				}
			})
			if ticks == 0 {
				t.Fatalf("the grandchild %d is gone: --kill-leftovers=false must leave it running", pid)
			}
			var e wire.Entity
			testenv.Eventually(t, "the end on the entity", ceiling, func() (bool, string) {
				e = w.entity(t, "left")
				return reason(e, state.RunCompletedExitZero) != nil, fmt.Sprintf("reasons %+v", e.State.Reasons)
			})
			end := reason(e, state.RunCompletedExitZero)
			if !strings.Contains(end.Message, "1 leftover process still running: sleep") {
				t.Errorf("the end does not say what it left running: %+v", end)
			}
			named := false
			for _, ev := range end.Evidence {
				named = named || ev.ID == fmt.Sprintf("pid:%d:%d", pid, ticks)
			}
			if !named {
				t.Errorf("the end's evidence does not name pid %d: %+v", pid, end.Evidence)
			}
			if f := reason(e, state.RunHealthLeftoverProcesses); f != nil {
				t.Errorf("a leftover finding made of exec's claim: %+v", f)
			}
			if startTicks(pid) != ticks {
				t.Errorf("the grandchild %d, named only in exec's evidence, was ended", pid)
			}
		})
	}
}

// TestExecKeepsTheTailOfStderr: a job that fails with "db migration
// failed" on stderr shows that line on the entity (status --json, and the
// daemon's API and entity page); exec's own stderr still passes all of it
// through. With a long output only the end is kept, valid UTF-8, within
// the evidence limits; --keep-stdout keeps stdout's too, which is not
// kept by default.
func TestExecKeepsTheTailOfStderr(t *testing.T) {
	long := `i=0; while [ $i -lt 3000 ]; do echo "line $i: é 日本"; i=$((i+1)); done`
	for _, w := range execTargets(t) {
		t.Run(w.name, func(t *testing.T) {
			r := w.run(t, "--id", "mig", "--", "sh", "-c", `echo "applying 0042_users"; echo "db migration failed" >&2; exit 1`)
			if r.code != 1 || !strings.Contains(r.stderr, "db migration failed\n") || r.stdout != "applying 0042_users\n" {
				t.Fatalf("exit %d, stdout %q, stderr %q: exec must pass the output through", r.code, r.stdout, r.stderr)
			}
			e := w.entity(t, "mig")
			end := reason(e, state.RunFailedExitNonzero)
			if end == nil {
				t.Fatalf("no end reason: %+v", e.State.Reasons)
			}
			var tail string
			for _, ev := range end.Evidence {
				if ev.ID == "stderr" {
					tail = ev.Detail
				}
				if strings.Contains(ev.Detail, "applying") {
					t.Errorf("stdout was kept without --keep-stdout: %+v", ev)
				}
			}
			if tail != "db migration failed\n" {
				t.Errorf("stderr tail %q, want the line; evidence %+v", tail, end.Evidence)
			}
			if w.d != nil {
				page := httpGet(t, w.d.base+"/entities/session/mig")
				if !strings.Contains(page, "db migration failed") {
					t.Errorf("the entity page does not show the stderr line:\n%s", page)
				}
			}

			// A long output on both streams, stdout kept too.
			r = w.run(t, "--id", "long", "--keep-stdout", "--", "sh", "-c", long+"; "+long+" >&2; exit 2")
			if r.code != 2 || strings.Count(r.stdout, "\n") != 3000 || strings.Count(r.stderr, "\n") != 3000 {
				t.Fatalf("exit %d, %d stdout lines, %d stderr lines: all must pass through", r.code, strings.Count(r.stdout, "\n"), strings.Count(r.stderr, "\n"))
			}
			end = reason(w.entity(t, "long"), state.RunFailedExitNonzero)
			kept := map[string]string{}
			for _, ev := range end.Evidence {
				for _, s := range []string{"stdout", "stderr"} {
					if strings.HasPrefix(ev.ID, s+", last ") {
						kept[s] += ev.Detail
					}
					if len(ev.Detail) > wire.MaxEvidenceField {
						t.Errorf("%s: a piece of %d bytes", ev.ID, len(ev.Detail))
					}
				}
			}
			for s, out := range map[string]string{"stdout": r.stdout, "stderr": r.stderr} {
				if k := kept[s]; len(k) == 0 || len(k) > 4096 || !strings.HasSuffix(out, k) || !strings.HasSuffix(k, "line 2999: é 日本\n") {
					t.Errorf("%s kept %d bytes, want the last ≤4096 bytes of what was printed, ending with its last line", s, len(k))
				}
			}
		})
	}
}

// TestExecReapsOrphans: exec, the subreaper, leaves no zombie while its
// child runs: the orphans of the child's tree that die are reaped as they
// die.
func TestExecReapsOrphans(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "w.db")
	ready, goOn := filepath.Join(dir, "ready"), filepath.Join(dir, "go")
	script := fmt.Sprintf(`for i in $(seq 20); do (sleep 0.01 &); done; echo $PPID > %q; while [ ! -e %q ]; do sleep 0.05; done`, ready, goOn)
	cmd := exec.Command(binPath, "exec", "--db", db, "--id", "reaps", "--", "sh", "-c", script)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	var seen string
	testenv.Eventually(t, "exec to reap the 20 orphans", ceiling, func() (bool, string) {
		if _, err := os.Stat(ready); err != nil {
			return false, "the child is not ready"
		}
		children, zombies := 0, 0
		seen = ""
		entries, _ := os.ReadDir("/proc")
		for _, d := range entries {
			pid, err := strconv.Atoi(d.Name())
			if err != nil {
				continue
			}
			b, err := os.ReadFile("/proc/" + d.Name() + "/stat")
			if err != nil {
				continue
			}
			s := string(b)
			f := strings.Fields(s[strings.LastIndexByte(s, ')')+2:])
			if f[1] != strconv.Itoa(cmd.Process.Pid) {
				continue
			}
			children++
			if f[0] == "Z" {
				zombies++
			}
			seen += fmt.Sprintf(" %d:%s", pid, f[0])
		}
		// The child itself (sh, or its sleep while it polls) and no
		// zombie: every orphan has died (sleep 0.01) and been reaped.
		return zombies == 0 && children == 1, "exec's children (pid:state):" + seen
	})
	if err := os.WriteFile(goOn, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("exec: %v", err)
	}
}

func httpGet(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %d %v", url, resp.StatusCode, err)
	}
	return string(b)
}
