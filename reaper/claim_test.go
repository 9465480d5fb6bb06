package reaper

import (
	"errors"
	"os"
	"testing"

	"watchdog/internal/testenv"
	"watchdog/probe"
	"watchdog/transitions"
)

// TestPIDGuard: who a pid runs as, proven from /proc on real processes;
// the pids no entity may have are refused whoever asks; a gone pid, or
// one whose start is not the one given, is not proven.
func TestPIDGuard(t *testing.T) {
	host := probe.NewHost()
	g := PIDGuard{Host: host, Daemon: os.Getpid()}
	mine := testenv.Sleep(t)
	if uid, err := g.CheckPID(mine.Process.Pid, 0); err != nil || uid != os.Getuid() {
		t.Errorf("a process of ours: uid %d, %v", uid, err)
	}
	if os.Getuid() == 0 {
		nobody := testenv.SleepAs(t, nobodyUID)
		if uid, err := g.CheckPID(nobody.Process.Pid, 0); err != nil || uid != nobodyUID {
			t.Errorf("nobody's process: uid %d, %v", uid, err)
		}
	}
	_, ticks, err := host.StartOf(mine.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := g.CheckPID(mine.Process.Pid, ticks+1); !errors.Is(err, transitions.ErrPIDGone) {
		t.Errorf("another start: %v, want ErrPIDGone", err)
	}
	if _, err := g.CheckPID(testenv.DeadPID(t), 0); !errors.Is(err, transitions.ErrPIDGone) {
		t.Errorf("a dead pid: %v, want ErrPIDGone", err)
	}
	refused := map[string]int{"init": 1, "kthreadd": 2, "the daemon": os.Getpid()}
	if anc := host.Ancestors(os.Getpid()); len(anc) > 0 {
		refused["the daemon's parent"] = anc[0]
	}
	if kt := kernelThread(t); kt > 0 {
		refused["a kernel thread"] = kt
	}
	for name, pid := range refused {
		if _, err := g.CheckPID(pid, 0); !errors.Is(err, transitions.ErrPIDRefused) {
			t.Errorf("%s (pid %d): %v, want ErrPIDRefused", name, pid, err)
		}
	}
	// Without a daemon (the CLI on the store), its own shell may be work.
	if anc := host.Ancestors(os.Getpid()); len(anc) > 0 && anc[0] > 2 {
		if _, err := (PIDGuard{Host: host}).CheckPID(anc[0], 0); err != nil {
			t.Errorf("the caller's parent without a daemon: %v", err)
		}
	}
}

// kernelThread is a child of kthreadd, 0 when none is visible.
func kernelThread(t *testing.T) int {
	t.Helper()
	host := probe.NewHost()
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return 0
	}
	for _, e := range ents {
		pid := 0
		for _, c := range e.Name() {
			if c < '0' || c > '9' {
				pid = -1
				break
			}
			pid = pid*10 + int(c-'0')
		}
		if pid <= 2 {
			continue
		}
		if o, err := host.Owner(pid); err == nil && o.PPID == 2 {
			return pid
		}
	}
	return 0
}
