package e2e

// Issue 39's findings, replayed against the built binary with real
// processes: what the on-call person reads at the edges is true.

import (
	"encoding/json"
	"fmt"
	"html"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"watchdog/internal/testenv"
	"watchdog/state"
	"watchdog/wire"
)

// #2: `probe --pid` applies the daemon's delivery rule. A running job's
// missing artifact is not due yet (exit 0, not a page); --ended, or the
// process gone, judges it as due.
func TestEdgesProbeArtifactsDueAtTheEnd(t *testing.T) {
	pid, _ := adhocSleep(t)
	root := t.TempDir()
	args := []string{"probe", "--pid", fmt.Sprint(pid), "--artifacts-root", root, "--artifact", "report.md"}
	for _, tc := range []struct {
		name  string
		extra []string
		pid   int
		code  int
		first string
	}{
		{"running", nil, pid, 0, "INFO - Running · Alive · report.md not due yet"},
		{"--ended", []string{"--ended"}, pid, 2, "CRITICAL - Running · Alive · No report.md produced"},
		{"gone", nil, testenv.DeadPID(t), 2, "CRITICAL - Running · Process dead · No report.md produced"},
	} {
		a := append([]string{}, args...)
		a[2] = fmt.Sprint(tc.pid)
		r := wd(t, "", append(a, tc.extra...)...)
		first, _, _ := strings.Cut(r.stdout, "\n")
		if r.code != tc.code || first != tc.first {
			t.Errorf("%s: exit %d, %q; want %d, %q\n%s%s", tc.name, r.code, first, tc.code, tc.first, r.stdout, r.stderr)
		}
	}
	// With the file there, the running job's contract is said as met.
	writeFile(t, root, "report.md", "done\n")
	if r := wd(t, "", args...); r.code != 0 || !strings.HasPrefix(r.stdout, "INFO - Running · Alive · report.md present\n") {
		t.Errorf("with the artifact: exit %d, %q", r.code, r.stdout)
	}
}

// #3: a completed job whose child outlives it is critical, and says why
// on every surface; the success code itself is counted neutral.
func TestEdgesSuccessNeverCritical(t *testing.T) {
	d := truthStart(t, strings.Replace(truthSections, "failure_window: 4s", "failure_window: 1h", 1))
	pidfile := filepath.Join(t.TempDir(), "pid")
	// The child left behind works: a busy loop, whose CPU must be seen.
	root := exec.Command("sh", "-c", `sh -c 'while :; do :; done' & echo $! > "$PIDFILE"; read x`)
	root.Env = append(os.Environ(), "PIDFILE="+pidfile)
	in, err := root.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := root.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = root.Process.Kill(); _ = root.Wait() })
	testenv.Eventually(t, "the child started", ceiling, func() (bool, string) {
		b, _ := os.ReadFile(pidfile)
		return len(b) > 0, "no pid yet"
	})
	left := leftoverPID(t, pidfile)
	t.Cleanup(func() { _ = syscall.Kill(left, syscall.SIGKILL) })
	d.register(t, fmt.Sprintf(`{"type":"session","id":"done-left","lifecycle":"running","pid":%d}`, root.Process.Pid))
	// The daemon watches the root (and so keeps its tree) before it ends:
	// what it never watched, it cannot know the children of.
	testenv.Eventually(t, "the root watched", ceiling, func() (bool, string) {
		_, m := d.do(t, "GET", "/metrics", "")
		return strings.Contains(m, `watchdog_watched_processes{mode="pidfd"} 1`), "not yet"
	})
	if code, body := d.transition(t, "session", "done-left", `{"to":"completed","reason":{"code":"run.completed.exit_zero"}}`); code != http.StatusOK {
		t.Fatalf("completed: %d %s", code, body)
	}
	_ = in.Close()
	_ = root.Wait()
	var e wire.Entity
	testenv.Eventually(t, "the leftover found on the completed session, its root gone", ceiling, func() (bool, string) {
		e = d.must(t, "session", "done-left")
		return reason(e, state.RunHealthLeftoverProcesses) != nil && e.State.Health == state.HealthOK, e.Display
	})
	if e.State.Severity != state.SeverityCritical || e.Display != "Completed · Leftover processes" {
		t.Errorf("the entity reads %s %q; want critical \"Completed · Leftover processes\"", e.State.Severity, e.Display)
	}
	st := wd(t, "", "status", "--db", d.db)
	if !strings.Contains(st.stdout, "Completed · Leftover processes") {
		t.Errorf("status does not say why the success is critical:\n%s", st.stdout)
	}
	// #10: the leftover's CPU on the entity read, status --wide and the
	// page (a busy loop: well above 10% of a core once measured over a
	// second, whatever else the machine runs).
	testenv.Eventually(t, "the leftover's CPU seen", ceiling, func() (bool, string) {
		l := d.must(t, "session", "done-left").Leftovers
		return l != nil && l.Running == 1 && len(l.Processes) == 1 && l.Processes[0].PID == left && l.CPUPercent >= 10, fmt.Sprintf("%+v", l)
	})
	if wide := wd(t, "", "status", "--wide", "--db", d.db); !strings.Contains(wide.stdout, " left") {
		t.Errorf("status --wide does not show the leftover's CPU:\n%s", wide.stdout)
	}
	if _, page := d.do(t, "GET", "/entities/session/done-left", ""); !strings.Contains(page, `data-testid="leftovers-cpu"`) {
		t.Error("the entity page does not show the leftover's CPU")
	}
	_, metrics := d.do(t, "GET", "/metrics", "")
	for _, want := range []string{
		`watchdog_reasons_active{reason_code="run.completed.exit_zero",severity="neutral"} 1`,
		`watchdog_reasons_active{reason_code="run.completed.exit_zero",severity="critical"} 0`,
		`watchdog_reasons_active{reason_code="run.health.leftover_processes",severity="critical"} 1`,
	} {
		if !strings.Contains(metrics, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
}

// #4: hosts by their names. The daemon records its hostname; the entity
// read, the API list, status and the page show it and accept it.
func TestEdgesHostsByName(t *testing.T) {
	name, err := os.Hostname()
	if err != nil || name == "" {
		t.Skipf("no hostname: %v", err)
	}
	d := truthStart(t, "")
	p := testenv.Sleep(t)
	d.register(t, fmt.Sprintf(`{"type":"session","id":"named","lifecycle":"running","pid":%d}`, p.Process.Pid))
	e := d.must(t, "session", "named")
	if e.HostName != name || e.HostID == "" || e.HostID == name {
		t.Fatalf("host_id %q, host_name %q; want the id and %q", e.HostID, e.HostName, name)
	}
	for _, v := range []string{name, e.HostID} {
		code, body := d.do(t, "GET", "/api/v1/entities?host="+url.QueryEscape(v), "")
		var l wire.EntityList
		if code != http.StatusOK || json.Unmarshal([]byte(body), &l) != nil || l.Total != 1 || l.Items[0].HostName != name {
			t.Errorf("?host=%s: %d %s", v, code, body)
		}
		st := wd(t, "", "status", "--db", d.db, "--host", v)
		if st.code != 0 || !strings.Contains(st.stdout, "named") {
			t.Errorf("status --host %s: exit %d\n%s%s", v, st.code, st.stdout, st.stderr)
		}
		code, page := d.do(t, "GET", "/?host="+url.QueryEscape(v), "")
		if code != http.StatusOK || !strings.Contains(page, "named") {
			t.Errorf("/?host=%s: %d", v, code)
		}
	}
	st := wd(t, "", "status", "--db", d.db)
	if lines := strings.Split(st.stdout, "\n"); len(lines) < 2 || !strings.Contains(lines[1], " "+name+" ") {
		t.Errorf("status's HOST column does not show %q:\n%s", name, st.stdout)
	}
}

// #5: processes with no heartbeat source are judged on liveness alone and
// say so; a first posted heartbeat or a declared file turns ageing on; a
// type the config requires to heartbeat ages from its start.
func TestEdgesNoHeartbeatSourceNoStall(t *testing.T) {
	d := truthStart(t, strings.Replace(truthSections, "jobs:", "  require_heartbeat: [invocation]\njobs:", 1))
	hb := filepath.Join(t.TempDir(), "never-written.hb")
	for _, reg := range []string{
		`{"type":"session","id":"quiet","lifecycle":"running","pid":%d}`,
		`{"type":"session","id":"posts","lifecycle":"running","pid":%d}`,
		`{"type":"session","id":"file","lifecycle":"running","pid":%d,"heartbeat_file":"` + hb + `"}`,
		`{"type":"invocation","id":"required","lifecycle":"running","pid":%d}`,
	} {
		d.register(t, fmt.Sprintf(reg, testenv.Sleep(t).Process.Pid))
	}
	if code, body := d.do(t, "POST", "/api/v1/entities/session/posts/heartbeat", "{}"); code != http.StatusOK {
		t.Fatalf("heartbeat: %d %s", code, body)
	}
	// Well past stalled_after (2s), through real sweeps.
	d.holds(t, "sweep", 4, 3*time.Second, func() {})
	for id, want := range map[string]state.Health{"quiet": state.HealthRunning, "posts": state.HealthStalled, "file": state.HealthStalled} {
		e := d.must(t, "session", id)
		if e.State.Health != want {
			t.Errorf("session/%s: %s (%s), want %s", id, e.State.Health, e.Display, want)
		}
		if hang := e.HangDetection; (id == "quiet") != (hang == wire.NoHangDetection) {
			t.Errorf("session/%s: hang_detection %q", id, hang)
		}
	}
	if e := d.must(t, "invocation", "required"); e.State.Health != state.HealthStalled || e.HangDetection != "" {
		t.Errorf("invocation/required (require_heartbeat): %s, hang_detection %q; want stalled from its start", e.State.Health, e.HangDetection)
	}
	code, page := d.do(t, "GET", "/entities/session/quiet", "")
	if code != http.StatusOK || !strings.Contains(page, wire.NoHangDetection) {
		t.Errorf("the entity page does not say hangs are not detected (%d)", code)
	}
	// The CLI on the database says the same, with the daemon's recorded
	// require_heartbeat (it has no config of its own).
	st := wd(t, "", "status", "--json", "--db", d.db)
	var l wire.EntityList
	if err := json.Unmarshal([]byte(st.stdout), &l); err != nil {
		t.Fatalf("status --json: %v\n%s", err, st.stdout)
	}
	for _, e := range l.Items {
		if want := map[string]string{"quiet": wire.NoHangDetection}[e.ID]; e.HangDetection != want {
			t.Errorf("status --json: %s/%s hang_detection %q, want %q", e.Type, e.ID, e.HangDetection, want)
		}
	}
	// A first posted heartbeat turns ageing on for the quiet one too.
	d.do(t, "POST", "/api/v1/entities/session/quiet/heartbeat", "{}")
	testenv.Eventually(t, "session/quiet stalled once it heartbeated and fell silent", ceiling, func() (bool, string) {
		e := d.must(t, "session", "quiet")
		return e.State.Health == state.HealthStalled && e.HangDetection == "", e.Display
	})
}

// serverPID is the pid of the `watchdog serve --config cfg` running.
func serverPID(t *testing.T, cfg string) int {
	t.Helper()
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	for _, dir := range dirs {
		b, err := os.ReadFile(dir + "/cmdline")
		if err != nil {
			continue
		}
		if args := strings.Split(strings.TrimRight(string(b), "\x00"), "\x00"); len(args) == 4 && args[1] == "serve" && args[3] == cfg {
			var pid int
			fmt.Sscan(filepath.Base(dir), &pid)
			return pid
		}
	}
	t.Fatalf("no serve --config %s running", cfg)
	return 0
}

// #7: "last judged" after a daemon's crash is its last judgement, not its
// start: the last observation it wrote says when it last looked.
func TestEdgesLastJudgedAfterACrash(t *testing.T) {
	d := truthStart(t, "")
	p := testenv.Sleep(t)
	d.register(t, fmt.Sprintf(`{"type":"session","id":"judged","lifecycle":"running","pid":%d}`, p.Process.Pid))
	testenv.Eventually(t, "judged alive", ceiling, func() (bool, string) {
		e := d.must(t, "session", "judged")
		return e.State.Health == state.HealthRunning, e.Display
	})
	d.waitRuns(t, "sweep", 2) // the start's presence is now well behind
	killed := time.Now()
	if err := p.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, "the death judged", ceiling, func() (bool, string) {
		e := d.must(t, "session", "judged")
		return e.State.Health == state.HealthProcessDead, e.Display
	})
	if err := syscall.Kill(serverPID(t, filepath.Join(filepath.Dir(d.db), "config.yaml")), syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	var j judgedBy
	testenv.Eventually(t, "the database unserved", ceiling, func() (bool, string) {
		j = statusJudge(t, wd(t, "", "status", "--json", "--db", d.db))
		return !j.DaemonServing, "still served"
	})
	if j.LastJudgedAt == nil || j.LastJudgedAt.Before(killed.Add(-time.Millisecond)) {
		t.Errorf("last judged %v, want the death's judgement, at or after %s (the daemon started before)", j.LastJudgedAt, killed.Format(time.RFC3339Nano))
	}
	r := wd(t, "", "status", "--db", d.db)
	if !strings.Contains(r.stderr, "no watchdog daemon is serving this database; last judged ") {
		t.Errorf("status after the crash: stderr %q", r.stderr)
	}
}

// #9: every command a "What to do" names, as the daemon's /runbook serves
// it, is a command of the built binary: `watchdog CMD --help` runs, and
// the flags it gives are that command's.
func TestEdgesRunbookCommandsRun(t *testing.T) {
	d := truthStart(t, "")
	code, page := d.do(t, "GET", "/runbook", "")
	if code != http.StatusOK {
		t.Fatalf("GET /runbook: %d", code)
	}
	todo := regexp.MustCompile(`(?s)<p class="todo" data-testid="todo"><strong>Do\.</strong>(.*?)</p>`)
	cmdRe := regexp.MustCompile("`((?:watchdog|wd) [^`]+)`")
	n := 0
	for _, m := range todo.FindAllStringSubmatch(page, -1) {
		for _, c := range cmdRe.FindAllStringSubmatch(m[1], -1) {
			n++
			words := strings.Fields(html.UnescapeString(c[1]))
			if words[0] != "watchdog" {
				t.Errorf("a What to do names %q, not a watchdog command", c[1])
				continue
			}
			// The command's words up to its first argument or flag.
			var path []string
			for _, w := range words[1:] {
				if strings.HasPrefix(w, "-") || strings.ContainsAny(w, "/:<>.") {
					break
				}
				path = append(path, w)
			}
			r := wd(t, "", append(path, "--help")...)
			if r.code != 0 || !strings.Contains(r.stdout, "Usage:") {
				t.Errorf("%q: watchdog %s --help exits %d: %s", c[1], strings.Join(path, " "), r.code, r.stderr)
				continue
			}
			for _, w := range words[1:] {
				if flag, _, _ := strings.Cut(w, "="); strings.HasPrefix(flag, "--") && !strings.Contains(r.stdout, flag) {
					t.Errorf("%q: watchdog %s takes no %s", c[1], strings.Join(path, " "), flag)
				}
			}
		}
	}
	if n == 0 {
		t.Fatal("no command in any What to do of /runbook: the test reads nothing")
	}
}

// #10: a snooze's time left reads as set, two units, rounded: "4h" right
// after `--for 4h`, never "3h".
func TestEdgesSnoozeCountdown(t *testing.T) {
	db := filepath.Join(t.TempDir(), "w.db")
	if r := wd(t, `{"type":"session","id":"s-3","lifecycle":"running"}`, "register", "--db", db, "--json", "-"); r.code != 0 {
		t.Fatalf("register: %+v", r)
	}
	if r := wd(t, "", "transition", "session/s-3", "failed", "--reason", "run.failed.exit_nonzero", "--db", db); r.code != 0 {
		t.Fatalf("fail: %+v", r)
	}
	if r := wd(t, "", "snooze", "session:s-3:run.failed.exit_nonzero", "--for", "4h", "--db", db); r.code != 0 {
		t.Fatalf("snooze: %+v", r)
	}
	r := wd(t, "", "attention", "--include-dismissed", "--db", db)
	if !strings.Contains(r.stdout, "[snoozed, 4h left]") && !strings.Contains(r.stdout, "[snoozed, 3h 59m left]") {
		t.Errorf("attention after --for 4h:\n%s", r.stdout)
	}
}
