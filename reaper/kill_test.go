package reaper

import (
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"watchdog/internal/testenv"
	"watchdog/probe"
	"watchdog/state"
	"watchdog/store"
	"watchdog/transitions"
)

// nobodyUID is the uid of the unprivileged user the tests run processes
// as when they can (as root).
const nobodyUID = 65534

// TestMayKill: the targets the reaper refuses whatever the registration
// says, judged on real processes.
func TestMayKill(t *testing.T) {
	host := probe.NewHost()
	self := os.Getpid()
	ancestors := host.Ancestors(self)
	if len(ancestors) == 0 || ancestors[len(ancestors)-1] != 1 {
		t.Fatalf("ancestors of %d: %v, want a chain ending at 1", self, ancestors)
	}
	mine := testenv.Sleep(t).Process.Pid // runs as the test's own uid
	for _, c := range []struct {
		name    string
		pid     int
		uids    []int
		wantWhy string // "" = may kill
	}{
		// Failure cases
		{"pid 1", 1, []int{0}, "never signalled"},
		{"pid 0", 0, []int{0}, "never signalled"},
		{"the daemon itself", self, []int{os.Getuid()}, "the watchdog itself"},
		{"the daemon's parent", os.Getppid(), []int{os.Getuid()}, "ancestor of the watchdog"},
		{"owner not listed", mine, []int{os.Getuid() + 4242}, "not in reaper.kill_users"},
		// Success cases
		{"owner listed", mine, []int{os.Getuid()}, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := &Reaper{Prober: host, Settings: Settings{KillUIDs: c.uids}}
			why := r.mayKill(c.pid, self, ancestors)
			if (c.wantWhy == "") != (why == "") || !strings.Contains(why, c.wantWhy) {
				t.Errorf("mayKill(%d) = %q, want %q", c.pid, why, c.wantWhy)
			}
		})
	}
	t.Run("default refuses root's process", func(t *testing.T) {
		if os.Getuid() != 0 {
			t.Skip("the test's processes are root's only when it runs as root")
		}
		r := &Reaper{Prober: host}
		if why := r.mayKill(mine, self, ancestors); !strings.Contains(why, "runs as root") {
			t.Errorf("mayKill(root's sleep) with no kill_users = %q, want a refusal naming root", why)
		}
	})
	t.Run("default allows another user's process", func(t *testing.T) {
		other := testenv.SleepAs(t, nobodyUID).Process.Pid
		r := &Reaper{Prober: host}
		if why := r.mayKill(other, self, ancestors); why != "" {
			t.Errorf("mayKill(nobody's sleep) with no kill_users = %q, want allowed", why)
		}
	})
}

// TestKillOrphansNeverAimsAtRoot is the attack of the hardening issue: a
// client registers a live process it does not own under a dead supervisor
// and waits for kill_orphans to SIGTERM it. With the default kill_users,
// root's process is reaped as a phantom (the record ends) but never
// signalled; nobody's orphan, registered by nobody (its uid proven), is
// stopped. A process registered by another uid than its own is never
// signalled either (TestKillOrphansOnlyTheOwners).
func TestKillOrphansNeverAimsAtRoot(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("needs root: the victim is a root-owned process")
	}
	f := newFixture(t)
	supervisor := testenv.DeadPID(t)
	victim := testenv.Sleep(t)              // root's
	orphan := testenv.SleepAs(t, nobodyUID) // an unprivileged user's
	f.r.Settings.KillOrphans = true         // kill_users left unset: every user but root
	f.r.Settings.KillGrace = 50 * time.Millisecond
	var signalled []int
	f.r.Signal = func(pid, sig int) error {
		signalled = append(signalled, pid)
		return syscall.Kill(pid, syscall.Signal(sig))
	}
	f.register(store.Entity{Type: "session", ID: "victim", PID: victim.Process.Pid, SupervisorPID: supervisor})
	f.registerAs(store.Entity{Type: "session", ID: "orphan", PID: orphan.Process.Pid, SupervisorPID: supervisor}, transitions.PeerPrincipal(nobodyUID, "nobody"))
	f.sweep()
	f.clock.Advance(2 * time.Hour)
	rep := f.reap()
	if len(rep.Actions) != 2 {
		t.Fatalf("reap: %+v", rep.Actions)
	}
	for _, a := range rep.Actions {
		if a.Reason != state.SystemReaperPhantomOrphaned {
			t.Errorf("%s/%s reaped with %s, want %s", a.Type, a.ID, a.Reason, state.SystemReaperPhantomOrphaned)
		}
	}
	if !alive(victim.Process.Pid) {
		t.Fatal("root's process was killed")
	}
	for _, pid := range signalled {
		if pid == victim.Process.Pid {
			t.Fatalf("root's process %d was signalled", pid)
		}
	}
	done := make(chan error, 1)
	go func() { done <- orphan.Wait() }()
	select {
	case <-done:
	case <-time.After(ceiling):
		t.Fatalf("nobody's orphan still running %s after kill_orphans; last seen: %s", ceiling, procState(orphan.Process.Pid))
	}
}

// TestKillOrphansOnlyTheOwners: kill_orphans signals a process only when
// the entity's registration proved a uid and the process runs as it. An
// orphan of nobody's registered by a token without uids (no uid proven)
// or by another uid (root, say) is reaped as a phantom, never signalled.
func TestKillOrphansOnlyTheOwners(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("needs root: to run a process as nobody")
	}
	for _, tc := range []struct {
		name string
		by   transitions.Principal
	}{
		{"a token without uids", transitions.Principal{Name: "token:ci"}},
		{"another uid", transitions.PeerPrincipal(1000, "alice")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			orphan := testenv.SleepAs(t, nobodyUID)
			f.r.Settings.KillOrphans, f.r.Settings.KillUIDs = true, []int{nobodyUID}
			f.r.Settings.KillGrace = 10 * time.Millisecond
			var signalled []int
			f.r.Signal = func(pid, sig int) error { signalled = append(signalled, pid); return nil }
			f.registerAs(store.Entity{Type: "session", ID: "orphan", PID: orphan.Process.Pid, SupervisorPID: testenv.DeadPID(t)}, tc.by)
			f.sweep()
			f.clock.Advance(2 * time.Hour)
			if rep := f.reap(); len(rep.Actions) != 1 || rep.Actions[0].Reason != state.SystemReaperPhantomOrphaned {
				t.Fatalf("reap: %+v", rep.Actions)
			}
			if len(signalled) != 0 || !alive(orphan.Process.Pid) {
				t.Errorf("signalled %v: the registration did not prove nobody's uid", signalled)
			}
		})
	}
}
