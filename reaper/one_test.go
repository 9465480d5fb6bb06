package reaper

import (
	"context"
	"errors"
	"testing"
	"time"

	"watchdog/internal/testenv"
	"watchdog/internal/unixtime"
	"watchdog/state"
	"watchdog/store"
	"watchdog/transitions"
)

func (f *fixture) probeOne(typ, id string) Probed {
	f.t.Helper()
	p, err := f.r.ProbeOne(context.Background(), typ, id, true)
	if err != nil {
		f.t.Fatalf("ProbeOne %s/%s: %v", typ, id, err)
	}
	return p
}

func (f *fixture) auditCount(typ, id string) int {
	f.t.Helper()
	rows, err := f.st.Transitions(context.Background(), typ, id)
	if err != nil {
		f.t.Fatal(err)
	}
	return len(rows)
}

// ProbeOne records what a sweep would, only when it changed, and the death
// time it records is the one enforce_terminal counts the grace from.
func TestProbeOneRecordsChangesOnlyAndStartsTheGrace(t *testing.T) {
	f := newFixture(t)
	cmd := testenv.Sleep(t)
	f.register(store.Entity{Type: "session", ID: "s1", PID: cmd.Process.Pid})
	rows := f.auditCount("session", "s1")

	p := f.probeOne("session", "s1")
	if !p.Written || !p.Checked || p.Entity.Health != state.HealthRunning {
		t.Fatalf("first probe of a live process: written %v checked %v health %s", p.Written, p.Checked, p.Entity.Health)
	}
	stored := f.get("session", "s1")
	if stored.Health != state.HealthRunning || stored.UpdatedAt != p.Entity.UpdatedAt {
		t.Fatalf("stored %s at %v, probe says %v", stored.Health, stored.UpdatedAt, p.Entity.UpdatedAt)
	}

	// Unchanged: nothing written, not even updated_at.
	f.clock.Advance(time.Minute)
	if p := f.probeOne("session", "s1"); p.Written || p.Entity.Health != state.HealthRunning {
		t.Fatalf("unchanged entity: written %v health %s", p.Written, p.Entity.Health)
	}
	if again := f.get("session", "s1"); again.UpdatedAt != stored.UpdatedAt {
		t.Fatalf("unchanged probe moved updated_at %v -> %v", stored.UpdatedAt, again.UpdatedAt)
	}
	// A sweep after it finds nothing new either: the same observation.
	if rep := f.sweep(); rep.Written != 0 {
		t.Fatalf("sweep after ProbeOne wrote %d rows", rep.Written)
	}

	cmd.Process.Kill()
	cmd.Wait()
	f.clock.Advance(time.Second)
	diedAt := f.clock.Now().Truncate(unixtime.Precision) // as the store keeps it
	p = f.probeOne("session", "s1")
	if !p.Written || p.Entity.Health != state.HealthProcessDead || !p.Entity.DeadSince.Equal(diedAt) {
		t.Fatalf("after kill: written %v health %s dead_since %v (want %v)", p.Written, p.Entity.Health, p.Entity.DeadSince, diedAt)
	}
	if len(p.Entity.Reasons) == 0 || p.Entity.Reasons[0].Code != state.RunHealthProcessDead {
		t.Fatalf("reasons %+v", p.Entity.Reasons)
	}
	// A second look keeps the first death time: the grace does not restart.
	f.clock.Advance(10 * time.Second)
	if p := f.probeOne("session", "s1"); p.Written || !p.Entity.DeadSince.Equal(diedAt) {
		t.Fatalf("second probe of the dead process: written %v dead_since %v", p.Written, p.Entity.DeadSince)
	}
	if f.auditCount("session", "s1") != rows {
		t.Fatal("probing wrote an audit row: only transitions do")
	}

	// The grace (30s) counts from the probe's record, not from the last
	// look. (Past it by a second: stored times are float seconds, and the
	// exact boundary rounds either way.)
	f.clock.Advance(19 * time.Second)
	if rep := f.enforce(); len(rep.Actions) != 0 {
		t.Fatalf("enforced 29s after the recorded death: %+v", rep.Actions)
	}
	f.clock.Advance(2 * time.Second)
	if rep := f.enforce(); len(rep.Actions) != 1 || !rep.Actions[0].Applied {
		t.Fatalf("not enforced after the grace: %+v", rep.Actions)
	}
	if got := f.get("session", "s1").LifecycleOr(""); got != "aborted" {
		t.Fatalf("lifecycle %s, want aborted", got)
	}
}

func TestProbeOneRefusesWhatItMustNotJudge(t *testing.T) {
	f := newFixture(t)
	cmd := testenv.Sleep(t)
	f.register(store.Entity{Type: "session", ID: "remote", PID: cmd.Process.Pid, HostID: "another-host"})
	if _, err := f.w.Register(context.Background(), transitions.Registration{
		Entity: store.Entity{Type: "session", ID: "old"}, Legacy: true, Actor: transitions.ActorOrchestrator,
	}); err != nil {
		t.Fatal(err)
	}
	f.register(store.Entity{Type: "schedule", ID: "nightly", Lifecycle: ptr("enabled"), ScheduleCron: "@daily"})

	for _, tc := range []struct {
		typ, id string
		want    error
	}{
		{"session", "remote", ErrOtherHost},
		{"session", "old", ErrNotProbed},
		{"schedule", "nightly", ErrNotProbed},
		{"session", "absent", store.ErrNotFound},
	} {
		before, _ := f.st.Get(context.Background(), tc.typ, tc.id)
		_, err := f.r.ProbeOne(context.Background(), tc.typ, tc.id, true)
		if !errors.Is(err, tc.want) {
			t.Errorf("%s/%s: error %v, want %v", tc.typ, tc.id, err, tc.want)
		}
		if after, _ := f.st.Get(context.Background(), tc.typ, tc.id); after.UpdatedAt != before.UpdatedAt || after.Health != before.Health {
			t.Errorf("%s/%s: a refused probe wrote", tc.typ, tc.id)
		}
	}
}

// An entity that ended longer ago than failure_window is out of the
// sweep's reach, but one asked for by name is probed: a process still alive
// after its recorded end is worth seeing at any age.
func TestProbeOneReachesPastTheFailureWindow(t *testing.T) {
	f := newFixture(t)
	cmd := testenv.Sleep(t)
	f.register(store.Entity{Type: "session", ID: "s1", PID: cmd.Process.Pid})
	f.sweep()
	if _, err := f.w.Transition(context.Background(), transitions.Request{Type: "session", ID: "s1", To: "completed", Actor: transitions.ActorOrchestrator}); err != nil {
		t.Fatal(err)
	}
	f.clock.Advance(48 * time.Hour)
	if rep := f.sweep(); rep.Checked != 0 {
		t.Fatalf("the sweep probed an entity ended 48h ago: %+v", rep)
	}
	p := f.probeOne("session", "s1")
	if !p.Written || p.Entity.Health != state.HealthOrphaned {
		t.Fatalf("ended entity whose process lives: written %v health %s", p.Written, p.Entity.Health)
	}
	if got := f.get("session", "s1"); got.Health != state.HealthOrphaned || got.LifecycleOr("") != "completed" {
		t.Fatalf("stored %s %s: the probe must record, never reopen", got.LifecycleOr(""), got.Health)
	}
}
