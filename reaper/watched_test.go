package reaper

import (
	"context"
	"os/exec"
	"testing"
	"time"

	"watchdog/probe"
	"watchdog/state"
	"watchdog/store"
)

// subjects records what each probe was asked to look at.
type subjects struct {
	Prober
	watched map[int]bool // by pid: the probe was told the pidfd holds it
}

func (s *subjects) Probe(ctx context.Context, t probe.Subject, now time.Time) probe.Observations {
	s.watched[t.PID] = t.Watched
	return s.Prober.Probe(ctx, t, now)
}

// TestSweepTrustsThePidfd: a process the daemon watches by pidfd with no
// exit on it is judged alive by the sweep without a /proc read (the probe
// is told so: probe.TestWatchedReadsNothing); one whose pidfd the daemon
// does not hold is read.
func TestSweepTrustsThePidfd(t *testing.T) {
	f := newFixture(t)
	pids := map[string]int{}
	for _, id := range []string{"watched", "read"} {
		sleep := exec.Command("sleep", "60")
		if err := sleep.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = sleep.Process.Kill(); _ = sleep.Wait() })
		pids[id] = sleep.Process.Pid
		f.register(store.Entity{Type: "session", ID: id, PID: sleep.Process.Pid})
	}
	f.r.Watched = func(e *store.Entity) bool { return e.ID == "watched" }
	s := &subjects{Prober: f.r.Prober, watched: map[int]bool{}}
	f.r.Prober = s
	f.sweep()
	for id, want := range map[string]bool{"watched": true, "read": false} {
		if got, ok := s.watched[pids[id]]; !ok || got != want {
			t.Errorf("%s: probed %v, told watched %v; want %v", id, ok, got, want)
		}
		if h := f.get("session", id).Health; h != state.HealthRunning {
			t.Errorf("%s: health %s, want running", id, h)
		}
	}
}
