package e2e

// End-to-end tests of event-driven liveness (issue 13): the daemon runs
// with its sweep and enforcement at one hour, so anything it notices in
// these tests it noticed by pidfd, by the store's change feed or by a
// deadline of its own, never by a scan.

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"watchdog/internal/testenv"
	"watchdog/pidwatch"
)

// slowScans is the config of these tests: no scan comes round during one.
var slowScans = svConfig{Grace: "2s", Phantom: "1h", Enforce: "@every 1h", Reap: "@every 1h", Sweep: "@every 1h", Schedules: "@every 1h"}

// pidfdsOf lists the pids the process pid holds pidfds for (its
// /proc/PID/fdinfo "Pid:" lines of anon_inode:[pidfd] descriptors).
func pidfdsOf(t *testing.T, pid int) map[int]bool {
	t.Helper()
	dir := fmt.Sprintf("/proc/%d/fd", pid)
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatalf("read %s: %v", dir, err)
	}
	out := map[int]bool{}
	for _, e := range ents {
		link, err := os.Readlink(filepath.Join(dir, e.Name()))
		if err != nil || !strings.Contains(link, "pidfd") {
			continue
		}
		info, err := os.ReadFile(fmt.Sprintf("/proc/%d/fdinfo/%s", pid, e.Name()))
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(info), "\n") {
			if rest, ok := strings.CutPrefix(line, "Pid:"); ok {
				if n, err := strconv.Atoi(strings.TrimSpace(rest)); err == nil {
					out[n] = true
				}
			}
		}
	}
	return out
}

func TestServeWatchesACLIRegistrationByPidfd(t *testing.T) {
	t.Parallel()
	_, db, cfg := svSetup(t, slowScans)
	d := svStart(t, cfg, db)
	p := svSleep(t)
	// Registered by the CLI on the shared database, not through the
	// daemon: the change feed must bring it to the daemon.
	svRegister(t, db, fmt.Sprintf(`{"type":"session","id":"w1","lifecycle":"running","pid":%d}`, p.pid))
	testenv.Eventually(t, "the daemon holds a pidfd of the registered process", svDeadline, func() (bool, string) {
		fds := pidfdsOf(t, d.cmd.Process.Pid)
		return fds[p.pid], fmt.Sprintf("pidfds of %v", fds)
	})
	// Judged at first sight, not at the next (hourly) sweep.
	d.waitEntity("session", "w1", "judged running", func(e svEntity) bool { return e.State.Health == "running" })
	if got := d.metric(`watchdog_watched_processes{mode="pidfd"}`); got < 1 {
		t.Errorf(`watchdog_watched_processes{mode="pidfd"} = %v, want ≥ 1`, got)
	}

	p.kill(t)
	// The first wake may come before the test reaped its child, when the
	// kernel does not yet know the status: the finding is rewritten once
	// it does.
	want := "killed by SIGKILL"
	if !pidwatch.ExitStatusSupported() {
		want = "exit status not available"
	}
	d.waitEntity("session", "w1", "seen dead, saying how", func(e svEntity) bool {
		return e.State.Health == "process_dead" && strings.Contains(e.String(), want)
	})
	// The one-hour enforcement job never ran; the deadline at death +
	// terminal_grace ended it.
	e := d.waitEntity("session", "w1", "ended at its deadline", func(e svEntity) bool { return e.lifecycle() != "running" })
	if last := e.last(); e.lifecycle() != "aborted" || last.ReasonCode != "system.health.process_dead_no_terminal" || !strings.Contains(fmt.Sprint(last.Evidence), want) {
		t.Errorf("ended as %s by %+v; want aborted, system.health.process_dead_no_terminal, evidence saying %q", e.lifecycle(), last, want)
	}
	testenv.Eventually(t, "the dead process's pidfd closed", svDeadline, func() (bool, string) {
		fds := pidfdsOf(t, d.cmd.Process.Pid)
		return !fds[p.pid], fmt.Sprintf("pidfds of %v", fds)
	})
}

// orphan starts script in a shell that forks it into the background and
// exits at once, so the test process is not its parent: the test process
// is made a child subreaper for the duration and reaps exactly that pid
// (never any other child: os/exec waits for its own) once it has ended,
// the way init or systemd would.
func orphan(t *testing.T, script string) int {
	t.Helper()
	out, err := exec.Command("sh", "-c", "("+script+") >/dev/null 2>&1 & echo $!").Output()
	if err != nil {
		t.Fatalf("start %q: %v", script, err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(out)))
	if err != nil {
		t.Fatalf("start %q: pid %q: %v", script, out, err)
	}
	go func() {
		var ws unix.WaitStatus
		for {
			_, err := unix.Wait4(pid, &ws, 0, nil)
			if err != unix.EINTR {
				return
			}
		}
	}()
	t.Cleanup(func() { syscall.Kill(pid, syscall.SIGKILL) }) //nolint:errcheck // usually gone already
	return pid
}

func TestServeRecordsTheExitStatusOfProcessesItDidNotStart(t *testing.T) {
	// Not parallel: it makes the test process a child subreaper, which
	// would adopt the orphans of other tests too.
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		t.Skipf("cannot become a child subreaper: %v", err)
	}
	t.Cleanup(func() { unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 0, 0, 0, 0) }) //nolint:errcheck // best effort
	_, db, cfg := svSetup(t, slowScans)
	d := svStart(t, cfg, db)
	gate := filepath.Join(t.TempDir(), "go")
	cases := []struct {
		id, script, want string
	}{
		{"exit0", "exit 0", "exited with status 0"},
		{"exit3", "exit 3", "exited with status 3"},
		{"killed", "exec sh -c 'kill -KILL $$'", "killed by SIGKILL"},
	}
	pids := map[string]int{}
	for _, c := range cases {
		// Each waits for the gate, so it is registered and watched
		// before it ends.
		pid := orphan(t, fmt.Sprintf("while [ ! -e %s ]; do sleep 0.05; done; %s", gate, c.script))
		pids[c.id] = pid
		svRegister(t, db, fmt.Sprintf(`{"type":"session","id":%q,"lifecycle":"running","pid":%d}`, c.id, pid))
	}
	testenv.Eventually(t, "every process watched by pidfd", svDeadline, func() (bool, string) {
		fds := pidfdsOf(t, d.cmd.Process.Pid)
		for _, pid := range pids {
			if !fds[pid] {
				return false, fmt.Sprintf("pidfds %v, want %v", fds, pids)
			}
		}
		return true, ""
	})
	if !pidwatch.ExitStatusSupported() {
		t.Skip("this kernel does not keep the exit status of a pidfd's process (PIDFD_INFO_EXIT, Linux ≥ 6.15)")
	}
	if err := os.WriteFile(gate, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, c := range cases {
		e := d.waitEntity("session", c.id, "dead with its exit status", func(e svEntity) bool {
			return e.State.Health == "process_dead" && strings.Contains(e.String(), c.want)
		})
		if c.id != "killed" && strings.Contains(e.String(), "SIGKILL") || c.id == "killed" && strings.Contains(e.String(), "exited with status") {
			t.Errorf("%s: evidence names the wrong end: %s", c.id, e)
		}
		if e.ExitStatus == nil {
			t.Errorf("%s: no exit_status on the entity read: %s", c.id, e)
		}
	}
}

// STATUS= follows the live view: a CLI registration on the shared database
// shows in it with the sweep an hour away.
func TestServeStatusFollowsTheLiveView(t *testing.T) {
	t.Parallel()
	_, db, cfg := svSetup(t, slowScans)
	sd := svListenNotify(t)
	svStart(t, cfg, db, "NOTIFY_SOCKET="+sd.path)
	ready := sd.wait(t, 0, "READY=1")
	if msg := sd.all()[ready].text; !strings.Contains(msg, "STATUS=0 open entities") {
		t.Fatalf("READY's status: %q", msg)
	}
	svRegister(t, db, fmt.Sprintf(`{"type":"session","id":"st1","lifecycle":"running","pid":%d}`, testenv.DeadPID(t)))
	testenv.Eventually(t, "STATUS= counting the CLI's registration", svDeadline, func() (bool, string) {
		for _, m := range sd.all()[ready+1:] {
			if strings.Contains(m.text, "STATUS=1 open entities") {
				return true, ""
			}
		}
		return false, fmt.Sprintf("%q", sd.texts())
	})
}
