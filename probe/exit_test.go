//go:build linux

package probe

import (
	"context"
	"fmt"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"watchdog/internal/testenv"
	"watchdog/internal/unixtime"
	"watchdog/state"
)

// TestDeadPIDEvidenceNamesExit: a real process ends three ways; the
// probe's evidence names how, given the status the pidfd watch recorded,
// and says plainly when none was recorded (the finding: judge's tests).
func TestDeadPIDEvidenceNamesExit(t *testing.T) {
	h := NewHost()
	at := time.Now()
	for _, tc := range []struct {
		name   string
		start  func(t *testing.T) *exec.Cmd
		kill   bool // killed by the test once identified
		exit   *state.ExitStatus
		detail string // after "pid N "
	}{
		{"exit 0", shell("sleep 0.2; exit 0"), false, &state.ExitStatus{Code: 0, At: at}, "exited with status 0 (no such process; start time %s)"},
		{"exit 3", shell("sleep 0.2; exit 3"), false, &state.ExitStatus{Code: 3, At: at}, "exited with status 3 (no such process; start time %s)"},
		{"sigkill", sleeper, true, &state.ExitStatus{Signal: int(syscall.SIGKILL), At: at}, "was killed by SIGKILL (no such process; start time %s)"},
		{"unknown", sleeper, true, nil, "not running (no such process; start time %s; exit status not available)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cmd := tc.start(t)
			pid := cmd.Process.Pid
			id := identify(t, h, pid)
			if tc.kill {
				// Killed only once identified: a process killed first can
				// be a zombie before it is read.
				if err := cmd.Process.Kill(); err != nil {
					t.Fatal(err)
				}
			}
			_ = cmd.Wait() // reaped: the pid is gone

			r := h.Probe(context.Background(), Subject{PID: pid, StartTime: id.StartTime, StartTicks: id.StartTicks, BootID: id.BootID, Exit: tc.exit, NoHeartbeat: true}, time.Now())
			if r.PID.Cause == CausePIDReused {
				t.Skipf("pid %d was reused at once; nothing to say about its exit", pid)
			}
			if r.PID.Liveness != Dead {
				t.Fatalf("liveness %s (%s), want dead", r.PID.Liveness, r.PID.Cause)
			}
			want := fmt.Sprintf("pid %d ", pid) + fmt.Sprintf(tc.detail, fmt.Sprintf("%.2f", unixtime.Seconds(id.StartTime)))
			if got := r.PID.Detail(); got != want {
				t.Errorf("detail %q\nwant   %q", got, want)
			}
			if ev := r.Cited(Cites{PID: true}); len(ev) != 1 || ev[0].Detail != want {
				t.Errorf("evidence %+v, want %q", ev, want)
			}
		})
	}
}

func shell(script string) func(t *testing.T) *exec.Cmd {
	return func(t *testing.T) *exec.Cmd {
		cmd := exec.Command("sh", "-c", script)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
		return cmd
	}
}

// sleeper is a process the case kills once it has been identified.
func sleeper(t *testing.T) *exec.Cmd { return testenv.Sleep(t) }

// TestReusedPIDEvidenceKeepsExit: a death seen by pidfd before the pid was
// taken again still says how the recorded process ended.
func TestReusedPIDEvidenceKeepsExit(t *testing.T) {
	o := PIDObservation{
		Subject:  PIDSubject{PID: 4242, StartTime: time.Unix(1716517000, 0), Exit: &state.ExitStatus{Code: 3, At: time.Unix(1716517100, 0)}},
		Liveness: Dead, Cause: CausePIDReused, StartTime: time.Unix(1716517200, 0),
	}
	want := "pid 4242 reused by another process (start time 1716517200.00, recorded 1716517000.00; it exited with status 3)"
	if got := o.Detail(); got != want {
		t.Errorf("detail %q\nwant   %q", got, want)
	}
	if strings.Contains(o.Detail(), state.ExitNotAvailable) {
		t.Error("a known status is also called not available")
	}
}

// TestDeadPIDDetailAllocations: naming the exit keeps the detail line one
// buffer (the appenders stay allocation-cheap).
func TestDeadPIDDetailAllocations(t *testing.T) {
	if testenv.RaceEnabled {
		t.Skip("the race detector allocates")
	}
	o := PIDObservation{Subject: PIDSubject{PID: 4242, StartTime: time.Unix(1716517000, 0), Exit: &state.ExitStatus{Signal: 9}}, Liveness: Dead, Cause: CauseNoSuchProcess}
	b := make([]byte, 0, 256)
	if n := testing.AllocsPerRun(100, func() { b = o.appendDetail(b[:0]) }); n != 0 {
		t.Errorf("appendDetail allocates %v times, want 0", n)
	}
}
