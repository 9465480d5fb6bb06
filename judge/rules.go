package judge

import (
	"slices"
	"time"

	"watchdog/internal/cronspec"
	"watchdog/state"
	"watchdog/store"
	"watchdog/transitions"
)

// ByCron says e is judged by its cron spec (a schedule), not by a probe.
func ByCron(e *store.Entity) bool { return transitions.ByCron(e.Type) }

// Started is when e started: its recorded start, else its process's.
func Started(e *store.Entity) time.Time {
	if !e.StartedAt.IsZero() {
		return e.StartedAt
	}
	return e.PIDStartTime
}

// StateSince is when e entered its lifecycle state, the earliest a heartbeat
// ages from; a re-registration never changes it, so an upsert cannot reset a stall.
func StateSince(e *store.Entity) time.Time {
	if e.Lifecycle == nil {
		return time.Time{}
	}
	return e.LifecycleAt
}

// HeartbeatBase is the moment e's heartbeat ages from, as Classify ages it;
// a file not stat'ed since can only be newer, so a deadline is never late.
func HeartbeatBase(e *store.Entity, file time.Time) time.Time {
	base := e.HeartbeatAt
	if file.After(base) {
		base = file
	}
	if base.IsZero() {
		base = Started(e)
	}
	base, _ = agesFrom(base, StateSince(e))
	return base
}

// agesFrom is the one rule of where a heartbeat's age counts from: its last
// sign of life, never before the current state began (a restart is not
// stalled by the silence before it); fromState says the state's start won.
func agesFrom(last, stateSince time.Time) (at time.Time, fromState bool) {
	if stateSince.After(last) {
		return stateSince, true
	}
	return last, false
}

// JudgedByHeartbeat says whether e's health moves with its heartbeat's age.
func JudgedByHeartbeat(e *store.Entity) bool {
	return e.Open() && e.ScheduleCron == "" && e.DeadSince.IsZero() && e.Health != state.HealthProcessDead &&
		!transitions.Waiting(*e)
}

// ExpectsHeartbeat says whether e's heartbeat ages; without one, e is judged
// on liveness alone and hangs are not detected.
func ExpectsHeartbeat(e *store.Entity, s Settings) bool {
	return e.HeartbeatFile != "" || !e.HeartbeatAt.IsZero() || s.Thresholds.Requires(e.Type)
}

// HeartbeatBoundaries are the moments at which e's heartbeat judgement
// changes: idle, stalled, and the slow window's two ends (zero: none).
func HeartbeatBoundaries(e *store.Entity, file time.Time, s Settings) [4]time.Time {
	var b [4]time.Time
	if !JudgedByHeartbeat(e) {
		return b
	}
	th := s.Thresholds.WithDefaults()
	if base := HeartbeatBase(e, file); !base.IsZero() && (ExpectsHeartbeat(e, s) || !file.IsZero()) {
		b[0], b[1] = base.Add(th.IdleAfter), base.Add(th.StalledAfter)
	}
	if st := Started(e); !st.IsZero() {
		b[2], b[3] = st.Add(th.SlowAfter), st.Add(th.SlowUntil)
	}
	return b
}

// LastActivity is the latest sign of life in e's row and heartbeat file,
// what phantom_after counts from.
func LastActivity(e *store.Entity, file time.Time) time.Time {
	return slices.MaxFunc([]time.Time{e.CreatedAt, e.LifecycleAt, e.HeartbeatAt, e.StartedAt, file}, time.Time.Compare)
}

// DeadTarget is the terminal a dead process ends e in; "" means a dead
// process is flagged, never ended.
func DeadTarget(e *store.Entity) string {
	g, err := transitions.Lookup(e.Type)
	if err != nil || e.Lifecycle == nil {
		return ""
	}
	return g.DeadTarget(*e.Lifecycle)
}

// EnforceTarget is the terminal enforcement ends e in once its grace has run out, or "".
func EnforceTarget(e *store.Entity) string {
	if e.DeadSince.IsZero() || e.Terminal {
		return ""
	}
	return DeadTarget(e)
}

// GraceEnds is when terminal_grace runs out for e's recorded death: the
// owner's time to record its own end, across restarts.
func GraceEnds(e *store.Entity, s Settings) time.Time {
	if e.DeadSince.IsZero() {
		return time.Time{}
	}
	return e.DeadSince.Add(s.TerminalGrace)
}

// GraceOver says whether e's recorded death is past terminal_grace at now.
func GraceOver(e *store.Entity, s Settings, now time.Time) bool {
	return !e.DeadSince.IsZero() && !now.Before(GraceEnds(e, s))
}

// PhantomCandidate says e may be reaped as a phantom: open, with a process
// of its type's own recorded dead or orphaned, and an end to reach.
func PhantomCandidate(e *store.Entity) bool {
	return e.Open() && (e.Health == state.HealthProcessDead || e.Health == state.HealthOrphaned) && DeadTarget(e) != ""
}

// PhantomAt is when e may be reaped as a phantom at the earliest, never
// before terminal_grace (the owner's own end must win within it).
func PhantomAt(e *store.Entity, file time.Time, s Settings) time.Time {
	if !PhantomCandidate(e) {
		return time.Time{}
	}
	at := LastActivity(e, file).Add(s.PhantomAfter)
	if g := GraceEnds(e, s); !g.IsZero() && g.After(at) {
		at = g
	}
	return at
}

// NextFire is an enabled schedule's next fire time; zero otherwise or for a
// cron spec that does not parse.
func NextFire(e *store.Entity) time.Time {
	if e.ScheduleCron == "" || e.LifecycleOr("") != "enabled" {
		return time.Time{}
	}
	sched, err := cronspec.Parser.Parse(e.ScheduleCron)
	if err != nil {
		return time.Time{}
	}
	return sched.Next(lastFireBase(e))
}

// lastFireBase ignores LifecycleAt at registration, so fires missed before are owed.
func lastFireBase(e *store.Entity) time.Time {
	last := e.ScheduleLastFiredAt
	if last.IsZero() {
		last = e.CreatedAt
	}
	if e.LifecycleAt.After(e.CreatedAt) && e.LifecycleAt.After(last) {
		last = e.LifecycleAt
	}
	return last
}

// MisfireAt is when an enabled schedule's next fire (fire) turns from due
// to misfired: fire plus misfire_grace. Zero for no next fire.
func MisfireAt(e *store.Entity, s Settings) (fire, at time.Time) {
	fire = NextFire(e)
	if fire.IsZero() {
		return time.Time{}, time.Time{}
	}
	return fire, fire.Add(s.misfireGrace())
}

// EndedByDeath says the watchdog ended e because its process died, so its
// health stays process_dead rather than reading a clean end.
func EndedByDeath(e *store.Entity) bool {
	return e.Terminal && e.TransitionReason != nil && state.Subsumes(e.TransitionReason.Code, state.RunHealthProcessDead)
}

// Outcome is the outcome e carries by its type's graph, "" while its work is open.
func Outcome(e *store.Entity) string {
	g, err := transitions.Lookup(e.Type)
	if err != nil || e.Lifecycle == nil {
		return ""
	}
	return g.Outcome(*e.Lifecycle)
}

// Finished says whether e is finished for its dependants: it has an outcome.
func Finished(e *store.Entity) bool { return e.Terminal || Outcome(e) != "" }

// successes are the outcomes that deliver the work dependants wait for.
var successes = []string{"completed", "merged", "succeeded"}

// FailedFor says whether e is finished without the work its dependants
// wait for (failed, timed out, cancelled, skipped, ...).
func FailedFor(e *store.Entity) bool {
	o := Outcome(e)
	return o != "" && !slices.Contains(successes, o)
}

// HasProcess says whether e's type has a process of its own to judge.
func HasProcess(e *store.Entity) bool {
	g, err := transitions.Lookup(e.Type)
	return err == nil && g.DeadProcessTerminal != ""
}

// Probed says whether e has anything of its own to probe; a schedule's
// process only while enabled (nobody expects a paused one's to run).
func Probed(e *store.Entity) bool {
	if ByCron(e) {
		return e.PID > 0 && e.LifecycleOr("") == "enabled"
	}
	return e.PID > 0 || e.HeartbeatFile != "" || !e.HeartbeatAt.IsZero() || len(e.Artifacts) > 0 || len(e.LockFiles) > 0 ||
		HasProcess(e)
}
