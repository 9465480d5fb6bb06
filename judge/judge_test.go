package judge

import (
	"testing"
	"time"

	"watchdog/probe"
	"watchdog/state"
	"watchdog/store"
)

var t0 = time.Unix(1_800_000_000, 0)

func lc(s string) *string { return &s }

// seen is what a probe of e would report at now, built from a pid check's
// liveness and a heartbeat (hbAt zero: none; file says it came from a heartbeat file):
// no process is started and no file is read.
func seen(e store.Entity, l probe.Liveness, hbAt time.Time, file bool, now time.Time) Seen {
	t := Subject(&e, false)
	obs := probe.Observations{
		Terminal: t.Terminal, EndedByDeath: t.EndedByDeath, Waiting: t.Waiting, StateSince: t.StateSince,
		StartedAt: Started(&e), EndedAt: e.EndedAt,
		PID: probe.PIDObservation{Subject: PIDSubject(&e), Liveness: l},
	}
	if l == probe.Alive {
		obs.PID.StartTime = e.PIDStartTime
	}
	switch {
	case !hbAt.IsZero() && file:
		obs.Heartbeat = probe.HeartbeatObservation{Source: probe.HeartbeatFile, File: e.HeartbeatFile, Claimed: hbAt, At: hbAt, Age: now.Sub(hbAt)}
	case !hbAt.IsZero():
		obs.Heartbeat = probe.HeartbeatObservation{Source: probe.HeartbeatPosted, Claimed: hbAt, At: hbAt, Age: now.Sub(hbAt)}
	case !Started(&e).IsZero():
		obs.Heartbeat = probe.HeartbeatObservation{Source: probe.HeartbeatFromStart, Claimed: Started(&e), At: Started(&e), Age: now.Sub(Started(&e))}
	}
	if t.Terminal && len(e.Artifacts) == 0 {
		obs.Artifacts = probe.ArtifactResult{Delivery: state.DeliveryNotExpected}
	} else if len(e.Artifacts) == 0 {
		obs.Artifacts = probe.ArtifactResult{Delivery: state.DeliveryNotExpected}
	}
	s := Seen{Probed: true, Observed: obs}
	if file {
		s.HeartbeatFile = hbAt
	}
	return s
}

// orphaned is a live process whose supervisor is gone.
var orphaned = probe.Observations{
	PID:        probe.PIDObservation{Subject: probe.PIDSubject{PID: 4242}, Liveness: probe.Alive},
	Supervisor: probe.PIDObservation{Subject: probe.PIDSubject{PID: 9}, Liveness: probe.Dead},
	Artifacts:  probe.ArtifactResult{Delivery: state.DeliveryNotExpected},
}

// proc is an entity of type typ in lifecycle life, with a process
// recorded at t0 (registered then, started then).
func proc(typ, life string) store.Entity {
	return store.Entity{Type: typ, ID: "x", Lifecycle: lc(life), PID: 42, PIDStartTime: t0, HostID: "h",
		CreatedAt: t0, LifecycleAt: t0, StartedAt: t0, Health: state.HealthRunning, HealthSince: t0, Delivery: state.DeliveryNotExpected}
}

func dead(e store.Entity, since time.Time) store.Entity {
	e.Health, e.DeadSince, e.HealthSince = state.HealthProcessDead, since, since
	return e
}

// TestJudge pins what Judge makes of an (entity, seen, settings, now) for
// every type's rules, with no store and no processes: the health it
// records, the act it calls for, and when it must look next.
func TestJudge(t *testing.T) {
	s := DefaultSettings
	min := time.Minute
	waitingAgent := proc("agent", "idle")
	restarted := proc("agent", "busy")
	restarted.LifecycleAt = t0.Add(3 * time.Hour) // a transition began its state
	restarted.HeartbeatAt = t0.Add(time.Hour)     // its last posted heartbeat, before
	orphan := proc("session", "running")
	orphan.Health = state.HealthOrphaned
	endedByDeath := proc("session", "aborted")
	endedByDeath.Terminal, endedByDeath.EndedAt = true, t0.Add(time.Hour)
	endedByDeath.TransitionReason = &state.StateReason{Code: state.SystemHealthProcessDeadNoTerminal}
	endedByDeath.Health = state.HealthProcessDead
	schedule := store.Entity{Type: "schedule", ID: "nightly", Lifecycle: lc("enabled"), HostID: "h", ScheduleCron: "0 3 * * *",
		CreatedAt: t0, LifecycleAt: t0, ScheduleLastFiredAt: t0, Health: state.HealthOK}
	fire := NextFire(&schedule)
	paused := schedule
	paused.Lifecycle = lc("paused")
	posted := proc("session", "running")
	posted.HeartbeatAt = t0.Add(5 * time.Minute)
	show := store.Entity{Type: "show", ID: "sh", Lifecycle: lc("active"), PID: 42, PIDStartTime: t0, HostID: "h", CreatedAt: t0, LifecycleAt: t0, Health: state.HealthRunning}

	for _, tc := range []struct {
		name   string
		e      store.Entity
		seen   Seen
		now    time.Time
		health state.Health
		code   state.ReasonCode // a finding the observation must carry ("" none)
		act    ActKind
		to     string
		next   time.Time
	}{
		{name: "session alive and fresh: running, idle next",
			e: posted, seen: seen(posted, probe.Alive, t0.Add(5*min), false, t0.Add(6*min)), now: t0.Add(6 * min),
			health: state.HealthRunning, next: t0.Add(15 * min)},
		{name: "first registration starts the state's clock: an old heartbeat file is not a stall",
			e: proc("session", "running"), seen: seen(proc("session", "running"), probe.Alive, t0.Add(-3*time.Hour), true, t0.Add(min)), now: t0.Add(min),
			health: state.HealthRunning, next: t0.Add(10 * min)},
		{name: "the same file an hour after registration: stalled",
			e: proc("session", "running"), seen: seen(proc("session", "running"), probe.Alive, t0.Add(-3*time.Hour), true, t0.Add(61*min)), now: t0.Add(61 * min),
			health: state.HealthStalled, code: state.RunHealthStalled, next: t0.Add(3 * time.Hour)},
		{name: "an agent restarted by a transition ages from it, not from its last heartbeat",
			e: restarted, seen: seen(restarted, probe.Alive, t0.Add(time.Hour), false, t0.Add(3*time.Hour+5*min)), now: t0.Add(3*time.Hour + 5*min),
			health: state.HealthRunning, next: t0.Add(3*time.Hour + 10*min)},
		{name: "a waiting agent's silence is not judged",
			e: waitingAgent, seen: seen(waitingAgent, probe.Alive, time.Time{}, false, t0.Add(5*time.Hour)), now: t0.Add(5 * time.Hour),
			health: state.HealthRunning},
		{name: "session dies: process_dead recorded, enforcement at the grace's end",
			e: proc("session", "running"), seen: seen(proc("session", "running"), probe.Dead, time.Time{}, false, t0.Add(min)), now: t0.Add(min),
			health: state.HealthProcessDead, code: state.RunHealthProcessDead, next: t0.Add(min + s.TerminalGrace)},
		{name: "dead within terminal_grace: no act yet",
			e: dead(proc("session", "running"), t0.Add(min)), seen: seen(dead(proc("session", "running"), t0.Add(min)), probe.Dead, time.Time{}, false, t0.Add(min+10*time.Second)), now: t0.Add(min + 10*time.Second),
			health: state.HealthProcessDead, code: state.RunHealthProcessDead, next: t0.Add(min + s.TerminalGrace)},
		{name: "session dead past terminal_grace: ended aborted",
			e: dead(proc("session", "running"), t0.Add(min)), seen: seen(dead(proc("session", "running"), t0.Add(min)), probe.Dead, time.Time{}, false, t0.Add(2*min)), now: t0.Add(2 * min),
			health: state.HealthProcessDead, act: ActEnforce, to: "aborted", next: t0.Add(time.Hour)},
		{name: "invocation dead past terminal_grace: its own dead-process end",
			e: dead(proc("invocation", "running"), t0.Add(min)), seen: seen(dead(proc("invocation", "running"), t0.Add(min)), probe.Dead, time.Time{}, false, t0.Add(2*min)), now: t0.Add(2 * min),
			health: state.HealthProcessDead, act: ActEnforce, to: "failed", next: t0.Add(time.Hour)},
		// With no heartbeat source it is judged on liveness alone: the
		// next moment is slow_after's, not idle_after's.
		{name: "recorded dead but alive now: cleared, never ended",
			e: dead(proc("session", "running"), t0.Add(min)), seen: seen(dead(proc("session", "running"), t0.Add(min)), probe.Alive, time.Time{}, false, t0.Add(2*min)), now: t0.Add(2 * min),
			health: state.HealthRunning, next: t0.Add(time.Hour)},
		{name: "recorded dead, liveness unknown now: never ended",
			e: dead(proc("session", "running"), t0.Add(min)), seen: seen(dead(proc("session", "running"), t0.Add(min)), probe.Unknown, time.Time{}, false, t0.Add(2*min)), now: t0.Add(2 * min),
			health: state.HealthUnknown, code: state.RunHealthLivenessUnknown},
		{name: "dead and quiet for phantom_after: a phantom, before enforcement",
			e: dead(proc("session", "running"), t0.Add(2*time.Hour)), seen: seen(dead(proc("session", "running"), t0.Add(2*time.Hour)), probe.Dead, time.Time{}, false, t0.Add(3*time.Hour)), now: t0.Add(3 * time.Hour),
			health: state.HealthProcessDead, act: ActPhantom, to: "aborted"},
		{name: "orphaned and quiet for phantom_after: reaped as an orphan",
			e: orphan, seen: Seen{Probed: true, Observed: orphaned}, now: t0.Add(2 * time.Hour),
			health: state.HealthOrphaned, code: state.RunHealthOrphaned, act: ActPhantom, to: "aborted", next: t0.Add(3 * time.Hour)},
		{name: "an orphan whose heartbeat file is fresh is working, not a phantom",
			e: orphan, seen: Seen{Probed: true, HeartbeatFile: t0.Add(2*time.Hour - min), Observed: orphaned}, now: t0.Add(2 * time.Hour),
			health: state.HealthOrphaned, code: state.RunHealthOrphaned, next: t0.Add(2*time.Hour + 9*min)},
		{name: "a show's dead process has no end: flagged once the grace is over",
			e: dead(show, t0.Add(min)), seen: seen(dead(show, t0.Add(min)), probe.Dead, time.Time{}, false, t0.Add(2*min)), now: t0.Add(2 * min),
			health: state.HealthProcessDead, code: state.SystemHealthProcessDeadUnowned},
		{name: "a show's dead process within the grace: not flagged yet",
			e: dead(show, t0.Add(min)), seen: seen(dead(show, t0.Add(min)), probe.Dead, time.Time{}, false, t0.Add(min+5*time.Second)), now: t0.Add(min + 5*time.Second),
			health: state.HealthProcessDead, code: state.RunHealthProcessDead, next: t0.Add(min + s.TerminalGrace)},
		{name: "ended by the watchdog for a death: stays process_dead",
			e: endedByDeath, seen: seen(endedByDeath, probe.Dead, time.Time{}, false, t0.Add(2*time.Hour)), now: t0.Add(2 * time.Hour),
			health: state.HealthProcessDead},
		{name: "schedule before its fire: ok, the misfire deadline next",
			e: schedule, seen: Seen{}, now: t0.Add(min), health: state.HealthOK, next: fire.Add(s.MisfireGrace)},
		{name: "schedule past its fire within misfire_grace: due",
			e: schedule, seen: Seen{}, now: fire.Add(min), health: state.HealthDue, code: state.ScheduleHealthDue, next: fire.Add(s.MisfireGrace)},
		{name: "schedule past misfire_grace: misfired",
			e: schedule, seen: Seen{}, now: fire.Add(10 * min), health: state.HealthMisfired, code: state.ScheduleHealthMisfired},
		{name: "a paused schedule owes nothing",
			e: paused, seen: Seen{}, now: fire.Add(10 * min), health: state.HealthOK},
		{name: "a team has nothing of its own to probe: ok",
			e: store.Entity{Type: "team", ID: "t", Lifecycle: lc("active"), CreatedAt: t0, LifecycleAt: t0}, seen: Seen{}, now: t0.Add(time.Hour), health: state.HealthOK},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := Judge(tc.e, tc.seen, s, tc.now)
			if v.Observation.Health != tc.health {
				t.Errorf("health %s, want %s (reasons %v)", v.Observation.Health, tc.health, v.Observation.Reasons)
			}
			if tc.code != "" && !hasCode(v.Observation.Reasons, tc.code) {
				t.Errorf("reasons %v lack %s", codes(v.Observation.Reasons), tc.code)
			}
			got := ActNone
			if len(v.Acts) > 0 {
				got = v.Acts[0].Kind
			}
			if got != tc.act {
				t.Fatalf("act %v, want %v (%+v)", got, tc.act, v.Acts)
			}
			if tc.act != ActNone && v.Acts[0].To != tc.to {
				t.Errorf("act to %q, want %q", v.Acts[0].To, tc.to)
			}
			if !v.Next.Equal(tc.next) {
				t.Errorf("next %v, want %v", v.Next, tc.next)
			}
		})
	}
}

func hasCode(rs []state.StateReason, c state.ReasonCode) bool {
	for _, r := range rs {
		if r.Code == c {
			return true
		}
	}
	return false
}

func codes(rs []state.StateReason) []state.ReasonCode {
	var out []state.ReasonCode
	for _, r := range rs {
		out = append(out, r.Code)
	}
	return out
}

// TestJudgeRecordsNothingUnchanged: a judgement that sees what is stored
// changes nothing, so a sweep over a quiet host writes nothing.
func TestJudgeRecordsNothingUnchanged(t *testing.T) {
	e := proc("session", "running")
	now := t0.Add(5 * time.Minute)
	v := Judge(e, seen(e, probe.Alive, time.Time{}, false, now), DefaultSettings, now)
	if v.Changed {
		t.Fatalf("a running session seen running: changed (%+v)", v.Observation)
	}
	again := Judge(v.Applied(e), seen(e, probe.Alive, time.Time{}, false, now.Add(time.Minute)), DefaultSettings, now.Add(time.Minute))
	if again.Changed {
		t.Fatal("the recorded verdict judged again: changed")
	}
}

// TestStateSince: a first registration starts the clock, a transition
// starts it again, a re-registration (which leaves lifecycle_at) does not.
func TestStateSince(t *testing.T) {
	for _, tc := range []struct {
		name string
		e    store.Entity
		want time.Time
	}{
		{"registered", store.Entity{Lifecycle: lc("running"), CreatedAt: t0, LifecycleAt: t0}, t0},
		{"moved since", store.Entity{Lifecycle: lc("busy"), CreatedAt: t0, LifecycleAt: t0.Add(time.Hour)}, t0.Add(time.Hour)},
		{"legacy", store.Entity{CreatedAt: t0}, time.Time{}},
	} {
		if got := StateSince(&tc.e); !got.Equal(tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}

// TestJudgeTakesTheDeathEvent: a death the kernel reported is one
// observation holding process_dead, the kernel's moment as dead_since and
// the exit status; told again, it changes nothing.
func TestJudgeTakesTheDeathEvent(t *testing.T) {
	e := proc("session", "running")
	died := t0.Add(5 * time.Minute)
	now := died.Add(3 * time.Millisecond)
	x := &state.ExitStatus{Signal: 9, At: died}
	ev := Event{Died: true, Exit: x, At: died}
	t.Run("first", func(t *testing.T) {
		s := seen(e, probe.Dead, time.Time{}, false, now)
		s.Event = ev
		v := Judge(e, s, DefaultSettings, now)
		o := v.Observation
		if !v.Changed || o.Health != state.HealthProcessDead || !o.DeadSince.Equal(died) || o.Exit != x {
			t.Fatalf("changed %v health %s dead_since %v exit %+v: want process_dead since the death, with its status", v.Changed, o.Health, o.DeadSince, o.Exit)
		}
		again := Judge(v.Applied(e), s, DefaultSettings, now.Add(time.Second))
		if again.Changed || again.Observation.Exit != nil {
			t.Errorf("the same death judged again: changed %v, exit %+v", again.Changed, again.Observation.Exit)
		}
	})
	t.Run("no status", func(t *testing.T) {
		s := seen(e, probe.Dead, time.Time{}, false, now)
		s.Event = Event{Died: true, At: died}
		if o := Judge(e, s, DefaultSettings, now).Observation; o.Exit != nil || !o.DeadSince.Equal(died) {
			t.Errorf("exit %+v dead_since %v: want none, since the death", o.Exit, o.DeadSince)
		}
	})
}
