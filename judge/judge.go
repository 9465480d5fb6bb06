// Package judge is what an entity's state means: one pure judgement per
// entity from the stored row, what was seen now, the settings and the clock,
// with no I/O. Every path that judges an entity calls Judge (ADR-0033).
package judge

import (
	"fmt"
	"slices"
	"time"

	"watchdog/internal/unixtime"
	"watchdog/probe"
	"watchdog/state"
	"watchdog/store"
)

// Settings are the thresholds and windows a judgement applies (config
// `thresholds.*`), the same for the daemon and every command on its host.
type Settings struct {
	// Thresholds are the heartbeat and slowness thresholds.
	Thresholds    Thresholds
	TerminalGrace time.Duration
	PhantomAfter  time.Duration
	MisfireGrace  time.Duration
	FailureWindow time.Duration
}

// DefaultSettings are the config's defaults (docs/reference/config.md).
var DefaultSettings = Settings{
	Thresholds:    DefaultThresholds,
	TerminalGrace: 30 * time.Second,
	PhantomAfter:  time.Hour,
	MisfireGrace:  5 * time.Minute,
	FailureWindow: 24 * time.Hour,
}

// WithDefaults fills every unset (zero or negative) setting with its default.
func (s Settings) WithDefaults() Settings {
	d := DefaultSettings
	s.Thresholds = s.Thresholds.WithDefaults()
	for _, f := range []struct{ v, d *time.Duration }{
		{&s.TerminalGrace, &d.TerminalGrace}, {&s.PhantomAfter, &d.PhantomAfter},
		{&s.MisfireGrace, &d.MisfireGrace}, {&s.FailureWindow, &d.FailureWindow},
	} {
		if *f.v <= 0 {
			*f.v = *f.d
		}
	}
	return s
}

// misfireGrace is misfire_grace, its default when unset.
func (s Settings) misfireGrace() time.Duration {
	if s.MisfireGrace > 0 {
		return s.MisfireGrace
	}
	return DefaultSettings.MisfireGrace
}

// Window is failure_window, its default when unset: how long an ended
// entity stays in the queue and is still probed.
func (s Settings) Window() time.Duration {
	if s.FailureWindow > 0 {
		return s.FailureWindow
	}
	return DefaultSettings.FailureWindow
}

// Seen is what was observed of one entity now.
type Seen struct {
	// Probed says the probe ran; an entity with nothing to probe reads fine.
	Probed bool
	// Observed is what the probe saw, which Judge classifies.
	Observed probe.Observations
	// HeartbeatFile is the heartbeat file's mtime as last known (zero: unknown).
	HeartbeatFile time.Time
	// Descendants are the live descendants by pid, looked for only when LeftoversDue.
	Descendants []probe.Process
	// Event is what happened, when a judgement follows one; zero otherwise.
	Event Event
}

// Event is what the kernel told of the entity's process: an input of the
// judgement beside what was seen, never found again by reading /proc.
type Event struct {
	// Died: the kernel reported the recorded process's exit, which is final.
	Died bool
	// Exit is the exit status reported with it; nil: not known (yet).
	Exit *state.ExitStatus
	// At is when it died.
	At time.Time
}

// ActKind is the kind of lifecycle change a judgement calls for.
type ActKind uint8

// The acts. A caller applies those of its remit: the sweep only records,
// enforce_terminal enforces, reap_phantoms reaps, the monitor does all.
const (
	ActNone    ActKind = iota
	ActEnforce         // a dead process past terminal_grace: end it
	ActPhantom         // a phantom quiet for phantom_after: reap it
)

// Act is one lifecycle change a judgement calls for, to be made through
// the write path with actor reaper and a compare-and-set on From.
type Act struct {
	Kind    ActKind
	From    string
	To      string
	Reason  state.StateReason
	Detail  string
	Trigger string
}

// Verdict is what one judgement decided.
type Verdict struct {
	// Changed says Observation differs from the stored one.
	Observation store.Observation
	Changed     bool
	// Acts are the more specific first; a caller makes the first its remit
	// allows, and the compare-and-set turns any later one into a no-op.
	Acts []Act
	// Next is when the judgement may change with nothing new seen; zero: never.
	Next time.Time
	// Result is the classification of what was seen, when Probed.
	Result Result
}

// Judge judges e at now from what was seen. Seen.Observed must come from a
// probe of Subject(e, …) when Probed(e) (and of e's pid for a schedule).
func Judge(e store.Entity, seen Seen, s Settings, now time.Time) Verdict {
	var v Verdict
	if seen.Probed {
		v.Result = Classify(seen.Observed, s.Thresholds, now)
	}
	if ByCron(&e) {
		v.Observation, v.Changed = judgeSchedule(e, v.Result, seen.Probed, s, now)
	} else {
		v.Observation, v.Changed = observe(e, v.Result, seen, s, now)
	}
	// The acts judge the row as it was read: the grace counts from a
	// death recorded before, never from one first seen now.
	if seen.Probed {
		if a, ok := phantom(e, v.Result, seen.HeartbeatFile, s, now); ok {
			v.Acts = append(v.Acts, a)
		}
		if a, ok := enforce(e, v.Result.PID, s, now); ok {
			v.Acts = append(v.Acts, a)
		}
	}
	after := e
	apply(&after, v.Observation)
	v.Next = Next(&after, seen.HeartbeatFile, s, now)
	return v
}

// First is the first act of kind among kinds, ok false for none.
func (v Verdict) First(kinds ...ActKind) (Act, bool) {
	for _, a := range v.Acts {
		if slices.Contains(kinds, a.Kind) {
			return a, true
		}
	}
	return Act{}, false
}

// apply sets the observation's fields on e, as the store would.
func apply(e *store.Entity, o store.Observation) {
	e.Health, e.Delivery, e.Reasons, e.HealthSince, e.DeadSince = o.Health, o.Delivery, o.Reasons, o.HealthSince, o.DeadSince
	if o.Exit != nil {
		e.Exit = o.Exit
	}
}

// Recorded is e as the store holds it once o is recorded.
func Recorded(e store.Entity, o store.Observation) store.Entity {
	apply(&e, o)
	e.UpdatedAt = o.At
	return e
}

// Applied is e with the verdict's observation applied.
func (v Verdict) Applied(e store.Entity) store.Entity {
	apply(&e, v.Observation)
	return e
}

// Next is the earliest of e's deadlines after now (file: the heartbeat
// file's mtime as known); zero when none lies ahead.
func Next(e *store.Entity, file time.Time, s Settings, now time.Time) time.Time {
	if !e.Open() {
		return time.Time{}
	}
	var next time.Time
	consider := func(t time.Time) {
		if t.After(now) && (next.IsZero() || t.Before(next)) {
			next = t
		}
	}
	for _, b := range HeartbeatBoundaries(e, file, s) {
		consider(b)
	}
	if !e.DeadSince.IsZero() {
		consider(GraceEnds(e, s)) // ended, or flagged for want of an end, once the grace is over
	}
	consider(PhantomAt(e, file, s))
	_, misfire := MisfireAt(e, s)
	consider(misfire)
	return next
}

// observe judges an entity by its process and heartbeat.
func observe(e store.Entity, res Result, seen Seen, s Settings, now time.Time) (store.Observation, bool) {
	if !seen.Probed {
		// Nothing of its own to probe: fine as far as this host can tell.
		res = Result{Health: state.HealthOK, Delivery: e.Delivery}
	}
	if res.Delivery == "" {
		res.Delivery = e.Delivery
	}
	reasons := make([]state.StateReason, len(res.Reasons))
	copy(reasons, res.Reasons)
	for i := range reasons {
		reasons[i].EntityType, reasons[i].EntityID = e.Type, e.ID
	}
	obs := store.Observation{
		Health: res.Health, Delivery: res.Delivery, Reasons: reasons,
		HealthSince: e.HealthSince, DeadSince: e.DeadSince, SeenSeq: e.LastSeq, SeenDeadSince: e.DeadSince, At: now,
	}
	if res.Health != e.Health || obs.HealthSince.IsZero() {
		obs.HealthSince = now
	}
	obs.DeadSince = deadSince(e.DeadSince, res.Liveness, now)
	if ev := seen.Event; ev.Died && e.DeadSince.IsZero() && !ev.At.IsZero() && ev.At.Before(now) {
		obs.DeadSince = ev.At // the kernel's moment, not the look's
	}
	if x := seen.Event.Exit; x != nil && !state.SameExit(x, e.Exit) {
		obs.Exit, obs.PID = x, e.PID // recorded in the death's one write
		e.Exit = x                   // and cited by the findings below
	}
	if f, ok := unownedDeath(e, res, obs.DeadSince, s, now); ok {
		obs.Reasons = flagUnowned(obs.Reasons, f)
	}
	if len(seen.Descendants) > 0 && LeftoversDue(&e, res.Liveness) {
		// A finding beside the root's health, which it leaves alone.
		obs.Reasons = append(obs.Reasons, leftoverFinding(&e, res, seen.Descendants, now))
	}
	state.CarryOnsets(obs.Reasons, e.Reasons, now)
	return obs, changed(e, obs)
}

// deadSince keeps the first death seen (the grace counts from it, across
// restarts); a live process clears it, and unknown proves neither.
func deadSince(recorded time.Time, l probe.Liveness, now time.Time) time.Time {
	switch l {
	case probe.Dead:
		if recorded.IsZero() {
			return now
		}
	case probe.Alive:
		return time.Time{}
	}
	return recorded
}

// changed says whether obs differs from what e holds: a sweep over an
// unchanged host writes nothing.
func changed(e store.Entity, obs store.Observation) bool {
	return obs.Exit != nil || obs.Health != e.Health || obs.Delivery != e.Delivery || !obs.DeadSince.Equal(e.DeadSince) ||
		!obs.HealthSince.Equal(e.HealthSince) || !state.SameFindings(obs.Reasons, e.Reasons)
}

// enforce ends e recorded dead past terminal_grace, only on a conclusive
// death now: the recorded one may be old.
func enforce(e store.Entity, pid probe.PIDObservation, s Settings, now time.Time) (Act, bool) {
	to := EnforceTarget(&e)
	if to == "" || !GraceOver(&e, s, now) || pid.Liveness != probe.Dead {
		return Act{}, false
	}
	ev := pid.Evidence(now)
	// A stored message carries the moment, never an age: readers render
	// the age when they show it (state.Render).
	since := state.Stamp(e.DeadSince)
	detail := fmt.Sprintf("%s; dead since %s", pid.Detail(), since)
	ev.Detail = detail
	reason := state.Observed(state.SystemHealthProcessDeadNoTerminal, "process died without recording a terminal state; dead since "+since, ev)
	reason.Since = unixtime.Of(e.DeadSince)
	return Act{Kind: ActEnforce, From: e.LifecycleOr(""), To: to, Reason: reason, Detail: detail, Trigger: "process_exited"}, true
}

// PhantomDue says whether e may be a phantom at now by its row alone: only
// such an entity is worth a probe.
func PhantomDue(e *store.Entity, file time.Time, s Settings, now time.Time) bool {
	at := PhantomAt(e, file, s)
	return !at.IsZero() && !now.Before(at)
}

// phantom is reap_phantoms' judgement of e as read.
func phantom(e store.Entity, res Result, file time.Time, s Settings, now time.Time) (Act, bool) {
	if hb := res.Heartbeat; hb.Source == probe.HeartbeatFile && hb.At.After(file) {
		// An orphan that still writes its heartbeat is working, not a phantom.
		file = hb.At
	}
	if !PhantomDue(&e, file, s, now) {
		return Act{}, false
	}
	var code state.ReasonCode
	switch {
	case res.Liveness == probe.Dead && GraceOver(&e, s, now):
		// The owner keeps terminal_grace from the death, in which its own end must win.
		code = state.SystemReaperPhantomProcessDead
	case res.Liveness != probe.Dead && res.Health == state.HealthOrphaned:
		code = state.SystemReaperPhantomOrphaned
	default:
		// Alive and no longer orphaned, or unknown: never reaped.
		return Act{}, false
	}
	last := LastActivity(&e, file)
	ev := res.PID.Evidence(now)
	// The moment, not the age: readers render ages (state.Render).
	detail := fmt.Sprintf("%s; no activity since %s", res.PID.Detail(), state.Stamp(last))
	ev.Detail = detail
	reason := state.Observed(code, "phantom: the row said "+e.LifecycleOr("")+" but the process says otherwise; no activity since "+state.Stamp(last), ev)
	reason.Since = unixtime.Of(last)
	return Act{Kind: ActPhantom, From: e.LifecycleOr(""), To: DeadTarget(&e), Reason: reason, Detail: detail, Trigger: "reconciliation"}, true
}
