package reaper

import (
	"context"
	"os"
	"os/exec"
	"testing"
	"time"

	"watchdog/internal/testenv"
	"watchdog/judge"
	"watchdog/state"
	"watchdog/store"
)

// The per-entity entry points are the jobs' own steps: each test below
// builds the same situation twice, on two real stores, runs the entry point
// on one and the job on the other, and wants the same outcome from both,
// and the outcome the case names.

// twins builds two fixtures the same way: one for the entry point, one for
// the job. setup registers what it needs (its own processes, so that one
// side's kill does not change the other's) and returns the entity to judge.
func twins(t *testing.T, setup func(f *fixture) (typ, id string)) (one, job *fixture, typ, id string) {
	t.Helper()
	one, job = newFixture(t), newFixture(t)
	typ, id = setup(one)
	if jt, jid := setup(job); jt != typ || jid != id {
		t.Fatalf("setup named %s/%s then %s/%s", typ, id, jt, jid)
	}
	return one, job, typ, id
}

// sameDecision compares two actions but for their detail, which names
// each side's own pid.
func sameDecision(a, b Action) bool {
	if a.Detail == "" || b.Detail == "" {
		return false
	}
	a.Detail, b.Detail = "", ""
	return a == b
}

func TestObserveIsTheSweepsStep(t *testing.T) {
	ctx := context.Background()
	cases := []struct {
		name      string
		setup     func(f *fixture) (string, string)
		wantWrite bool
		health    state.Health
		deadSince bool
	}{
		{"live process, first look", func(f *fixture) (string, string) {
			f.register(store.Entity{Type: "session", ID: "s", PID: testenv.Sleep(t).Process.Pid})
			return "session", "s"
		}, true, state.HealthRunning, false},
		{"dead process starts the grace", func(f *fixture) (string, string) {
			f.register(store.Entity{Type: "session", ID: "s", PID: testenv.DeadPID(t)})
			return "session", "s"
		}, true, state.HealthProcessDead, true},
		{"unchanged host writes nothing", func(f *fixture) (string, string) {
			f.register(store.Entity{Type: "session", ID: "s", PID: testenv.Sleep(t).Process.Pid})
			f.sweep()
			return "session", "s"
		}, false, state.HealthRunning, false},
		{"orphan: supervisor gone", func(f *fixture) (string, string) {
			f.register(store.Entity{Type: "session", ID: "s", PID: testenv.Sleep(t).Process.Pid, SupervisorPID: testenv.DeadPID(t)})
			return "session", "s"
		}, true, state.HealthOrphaned, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			one, job, typ, id := twins(t, tc.setup)
			written, err := one.r.Observe(ctx, one.get(typ, id), judge.Event{})
			if err != nil {
				t.Fatal(err)
			}
			rep := job.sweep()
			if written != tc.wantWrite || (rep.Written == 1) != tc.wantWrite {
				t.Errorf("written: Observe %v, sweep wrote %d; want %v", written, rep.Written, tc.wantWrite)
			}
			for side, f := range map[string]*fixture{"Observe": one, "sweep": job} {
				e := f.get(typ, id)
				if e.Health != tc.health || e.DeadSince.IsZero() == tc.deadSince {
					t.Errorf("%s: health %s dead_since %v; want %s (dead_since set: %v)", side, e.Health, e.DeadSince, tc.health, tc.deadSince)
				}
			}
		})
	}
}

// A schedule handed to Observe (a monitor's check) is judged by its
// cron, as check_schedules judges it: one judgement whoever asks.
func TestObserveJudgesSchedulesByTheirCron(t *testing.T) {
	f := newFixture(t)
	f.register(store.Entity{Type: "schedule", ID: "nightly", Lifecycle: ptr("enabled"), ScheduleCron: "@every 10m"})
	f.clock.Advance(20 * time.Minute)
	if _, err := f.r.Observe(context.Background(), f.get("schedule", "nightly"), judge.Event{}); err != nil {
		t.Fatalf("Observe on a schedule: %v", err)
	}
	if e := f.get("schedule", "nightly"); e.Health != state.HealthMisfired {
		t.Fatalf("schedule 10m past its fire and misfire_grace 5m: health %s, want misfired", e.Health)
	}
}

func TestEnforceEntityIsEnforceTerminalsStep(t *testing.T) {
	ctx := context.Background()
	dead := func(advance time.Duration) func(f *fixture) (string, string) {
		return func(f *fixture) (string, string) {
			f.register(store.Entity{Type: "session", ID: "s", PID: testenv.DeadPID(t)})
			f.sweep()
			f.clock.Advance(advance)
			return "session", "s"
		}
	}
	cases := []struct {
		name      string
		setup     func(f *fixture) (string, string)
		dryRun    bool
		act       bool
		lifecycle string
	}{
		{"dead past terminal_grace is ended", dead(31 * time.Second), false, true, "aborted"},
		{"dead within terminal_grace waits", dead(29 * time.Second), false, false, "running"},
		{"dry run decides and writes nothing", dead(time.Minute), true, true, "running"},
		{"live process is never ended", func(f *fixture) (string, string) {
			f.register(store.Entity{Type: "session", ID: "s", PID: testenv.Sleep(t).Process.Pid})
			f.sweep()
			f.clock.Advance(time.Hour)
			return "session", "s"
		}, false, false, "running"},
		{"an agent ends failed", func(f *fixture) (string, string) {
			f.register(store.Entity{Type: "agent", ID: "a", Lifecycle: ptr("busy"), PID: testenv.DeadPID(t)})
			f.sweep()
			f.clock.Advance(time.Minute)
			return "agent", "a"
		}, false, true, "failed"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			one, job, typ, id := twins(t, tc.setup)
			one.r.Settings.DryRun, job.r.Settings.DryRun = tc.dryRun, tc.dryRun
			a, ok, err := one.r.enforceEntity(ctx, one.get(typ, id), judge.Event{})
			if err != nil {
				t.Fatal(err)
			}
			rep := job.enforce()
			if ok != tc.act || len(rep.Actions) != map[bool]int{true: 1}[tc.act] {
				t.Fatalf("acted: EnforceEntity %v (%+v), job %+v; want %v", ok, a, rep.Actions, tc.act)
			}
			if ok {
				if !sameDecision(a, rep.Actions[0]) {
					t.Errorf("EnforceEntity decided %+v, the job %+v", a, rep.Actions[0])
				}
				if a.Reason != state.SystemHealthProcessDeadNoTerminal || a.Applied == tc.dryRun {
					t.Errorf("action %+v (dry run %v)", a, tc.dryRun)
				}
			}
			for side, f := range map[string]*fixture{"EnforceEntity": one, "enforce_terminal": job} {
				if l := f.get(typ, id).LifecycleOr(""); l != tc.lifecycle {
					t.Errorf("%s: lifecycle %s, want %s", side, l, tc.lifecycle)
				}
			}
		})
	}
}

func TestEnforceEntityJudgesOnlyThisHost(t *testing.T) {
	f := newFixture(t)
	f.register(store.Entity{Type: "session", ID: "s", PID: testenv.DeadPID(t)})
	f.sweep()
	f.clock.Advance(time.Hour)
	e := f.get("session", "s")
	e.HostID = "elsewhere"
	if a, ok, err := f.r.enforceEntity(context.Background(), e, judge.Event{}); ok || err != nil {
		t.Fatalf("another host's entity: %+v %v %v", a, ok, err)
	}
	if l := f.get("session", "s").LifecycleOr(""); l != "running" {
		t.Fatalf("lifecycle %s", l)
	}
}

func TestReapPhantomEntityIsReapPhantomsStep(t *testing.T) {
	ctx := context.Background()
	// procs holds each fixture's orphan process, to see kill_orphans act.
	procs := map[*fixture]*exec.Cmd{}
	orphan := func(advance time.Duration) func(f *fixture) (string, string) {
		return func(f *fixture) (string, string) {
			p := testenv.Sleep(t)
			procs[f] = p
			f.register(store.Entity{Type: "session", ID: "o", PID: p.Process.Pid, SupervisorPID: testenv.DeadPID(t)})
			f.sweep()
			f.clock.Advance(advance)
			return "session", "o"
		}
	}
	cases := []struct {
		name      string
		setup     func(f *fixture) (string, string)
		dryRun    bool
		kill      bool
		reason    state.ReasonCode // "" = no action
		lifecycle string
	}{
		{"orphan quiet past phantom_after", orphan(61 * time.Minute), false, false, state.SystemReaperPhantomOrphaned, "aborted"},
		{"orphan within phantom_after", orphan(30 * time.Minute), false, false, "", "running"},
		{"orphan reaped and killed", orphan(61 * time.Minute), false, true, state.SystemReaperPhantomOrphaned, "aborted"},
		{"dry run", orphan(2 * time.Hour), true, false, state.SystemReaperPhantomOrphaned, "running"},
		{"dead and quiet", func(f *fixture) (string, string) {
			f.register(store.Entity{Type: "session", ID: "d", PID: testenv.DeadPID(t)})
			f.sweep()
			f.clock.Advance(2 * time.Hour)
			return "session", "d"
		}, false, false, state.SystemReaperPhantomProcessDead, "aborted"},
		{"team of an ended show is closed", func(f *fixture) (string, string) {
			f.register(store.Entity{Type: "show", ID: "sh", Lifecycle: ptr("archived")})
			f.register(store.Entity{Type: "team", ID: "t", Lifecycle: ptr("active"), ParentType: "show", ParentID: "sh"})
			return "team", "t"
		}, false, false, state.TeamHealthOrphaned, "closed"},
		{"play with a missing dependency is blocked", func(f *fixture) (string, string) {
			f.register(store.Entity{Type: "play", ID: "p", Lifecycle: ptr("planned"), DependsOn: []string{"ghost"}})
			return "play", "p"
		}, false, false, state.PlayBlockedDependencyInvalid, "blocked"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			one, job, typ, id := twins(t, tc.setup)
			for _, f := range []*fixture{one, job} {
				f.r.Settings.DryRun, f.r.Settings.KillOrphans = tc.dryRun, tc.kill
				f.r.Settings.KillUIDs = []int{os.Getuid()} // this test's own processes
				f.r.Settings.KillGrace = 100 * time.Millisecond
			}
			a, ok, err := one.r.reapPhantomEntity(ctx, one.get(typ, id))
			if err != nil {
				t.Fatal(err)
			}
			rep := job.reap()
			if ok != (tc.reason != "") || len(rep.Actions) != map[bool]int{true: 1}[tc.reason != ""] {
				t.Fatalf("acted: ReapPhantomEntity %v (%+v), job %+v; want %q", ok, a, rep.Actions, tc.reason)
			}
			if ok && (!sameDecision(a, rep.Actions[0]) || a.Reason != tc.reason || a.Applied == tc.dryRun) {
				t.Errorf("ReapPhantomEntity decided %+v, the job %+v; want %s (dry run %v)", a, rep.Actions[0], tc.reason, tc.dryRun)
			}
			for side, f := range map[string]*fixture{"ReapPhantomEntity": one, "reap_phantoms": job} {
				if l := f.get(typ, id).LifecycleOr(""); l != tc.lifecycle {
					t.Errorf("%s: lifecycle %s, want %s", side, l, tc.lifecycle)
				}
				if !tc.kill {
					continue
				}
				// kill_orphans sent SIGTERM to the verified process: it
				// exits, and Wait returns.
				done := make(chan error, 1)
				go func() { done <- procs[f].Wait() }()
				select {
				case <-done:
				case <-time.After(ceiling):
					t.Errorf("%s: orphan still running %s after kill_orphans; last seen: %s", side, ceiling, procState(procs[f].Process.Pid))
				}
			}
		})
	}
}

func TestCheckScheduleEntityIsCheckSchedulesStep(t *testing.T) {
	ctx := context.Background()
	schedule := func(lifecycle string, lastFired time.Duration, checkedBefore bool) func(f *fixture) (string, string) {
		return func(f *fixture) (string, string) {
			f.register(store.Entity{Type: "schedule", ID: "n", Lifecycle: ptr(lifecycle), ScheduleCron: "@every 10m",
				ScheduleLastFiredAt: f.clock.Now().Add(-lastFired)})
			if checkedBefore {
				if _, err := f.r.CheckSchedules(ctx); err != nil {
					t.Fatal(err)
				}
			}
			return "schedule", "n"
		}
	}
	cases := []struct {
		name      string
		setup     func(f *fixture) (string, string)
		wantWrite bool
		health    state.Health
	}{
		{"misfired", schedule("enabled", 30*time.Minute, false), true, state.HealthMisfired},
		{"due within misfire_grace", schedule("enabled", 12*time.Minute, false), true, state.HealthDue},
		{"fine", schedule("enabled", 5*time.Minute, false), true, state.HealthOK},
		{"paused owes nothing", schedule("paused", 5*time.Hour, false), true, state.HealthOK},
		{"unchanged writes nothing", schedule("enabled", 30*time.Minute, true), false, state.HealthMisfired},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			one, job, typ, id := twins(t, tc.setup)
			written, err := one.r.CheckScheduleEntity(ctx, one.get(typ, id))
			if err != nil {
				t.Fatal(err)
			}
			rep, err := job.r.CheckSchedules(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if written != tc.wantWrite || (rep.Written == 1) != tc.wantWrite {
				t.Errorf("written: CheckScheduleEntity %v, job wrote %d; want %v", written, rep.Written, tc.wantWrite)
			}
			for side, f := range map[string]*fixture{"CheckScheduleEntity": one, "check_schedules": job} {
				if h := f.get(typ, id).Health; h != tc.health {
					t.Errorf("%s: health %s, want %s", side, h, tc.health)
				}
			}
		})
	}
}

func TestCheckScheduleEntityRefusesOtherTypes(t *testing.T) {
	f := newFixture(t)
	f.register(store.Entity{Type: "session", ID: "s", PID: testenv.DeadPID(t)})
	before := f.get("session", "s")
	if _, err := f.r.CheckScheduleEntity(context.Background(), before); err == nil {
		t.Fatal("CheckScheduleEntity judged a session")
	}
	if after := f.get("session", "s"); after.Health != before.Health {
		t.Fatalf("a refused check recorded health %s (was %s)", after.Health, before.Health)
	}
}
