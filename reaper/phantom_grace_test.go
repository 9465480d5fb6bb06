package reaper

import (
	"testing"
	"time"

	"watchdog/internal/testenv"
	"watchdog/state"
	"watchdog/store"
)

// TestPhantomWaitsForTerminalGrace: an entity quiet for longer than
// phantom_after whose process has only just died is the owner's to end for
// terminal_grace; the phantom reaper must not jump in before it.
func TestPhantomWaitsForTerminalGrace(t *testing.T) {
	f := newFixture(t)
	proc := testenv.Sleep(t)
	f.register(store.Entity{Type: "session", ID: "quiet", PID: proc.Process.Pid})
	f.sweep()
	f.clock.Advance(2 * time.Hour) // well past phantom_after, no heartbeat

	if err := proc.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	proc.Wait() //nolint:errcheck // killed on purpose
	f.sweep()
	if e := f.get("session", "quiet"); e.Health != state.HealthProcessDead || e.DeadSince.IsZero() {
		t.Fatalf("after death: health %s dead_since %v", e.Health, e.DeadSince)
	}
	if rep := f.reap(); len(rep.Actions) != 0 {
		t.Fatalf("reaped inside terminal_grace: %+v", rep.Actions)
	}

	// A second more: dead_since is stored as float seconds, which loses
	// the nanoseconds the fake clock has.
	f.clock.Advance(f.r.Settings.TerminalGrace + time.Second)
	rep := f.reap()
	if len(rep.Actions) != 1 || rep.Actions[0].Reason != state.SystemReaperPhantomProcessDead || !rep.Actions[0].Applied {
		t.Fatalf("after the grace: %+v", rep.Actions)
	}
}
