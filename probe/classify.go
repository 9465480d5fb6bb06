package probe

import (
	"fmt"
	"time"

	"watchdog/state"
	"watchdog/unixtime"
)

// Thresholds are the ages and durations the classification compares with
// (SPEC §6, config `thresholds.*`).
type Thresholds struct {
	// IdleAfter: a heartbeat at least this old makes a live entity idle.
	IdleAfter time.Duration
	// StalledAfter: a heartbeat at least this old makes it stalled.
	StalledAfter time.Duration
	// SlowAfter and SlowUntil: a live entity with a fresh heartbeat that
	// has been running for a time in [SlowAfter, SlowUntil) gets the
	// informational reason run.health.slow.
	SlowAfter time.Duration
	SlowUntil time.Duration
}

// DefaultThresholds are the SPEC defaults: idle after 10m, stalled after
// 60m, slow from 60m until 3h. A zero field of the Thresholds passed to
// Classify or Probe takes its value from here.
var DefaultThresholds = Thresholds{
	IdleAfter:    10 * time.Minute,
	StalledAfter: 60 * time.Minute,
	SlowAfter:    60 * time.Minute,
	SlowUntil:    3 * time.Hour,
}

func (t Thresholds) withDefaults() Thresholds {
	if t.IdleAfter <= 0 {
		t.IdleAfter = DefaultThresholds.IdleAfter
	}
	if t.StalledAfter <= 0 {
		t.StalledAfter = DefaultThresholds.StalledAfter
	}
	if t.SlowAfter <= 0 {
		t.SlowAfter = DefaultThresholds.SlowAfter
	}
	if t.SlowUntil <= 0 {
		t.SlowUntil = DefaultThresholds.SlowUntil
	}
	return t
}

// Observations are everything seen about one entity: the input of
// Classify.
type Observations struct {
	// Terminal: the entity has already ended (its lifecycle is terminal).
	Terminal bool
	// PID is the check of the entity's own process.
	PID PIDObservation
	// Supervisor is the check of its supervisor's process; a zero
	// Target.PID means none was declared or checked.
	Supervisor PIDObservation
	// ParentTerminal: the entity's parent entity has ended.
	ParentTerminal bool
	Heartbeat      HeartbeatObservation
	// StartedAt is when the entity started (for slow); zero if unknown.
	StartedAt time.Time
	// EndedAt is when a terminal entity's end was recorded; zero if unknown.
	EndedAt time.Time
	// Locks are checked for terminal entities only.
	Locks LockObservation
	// Artifacts is the artifact contract's verdict; a zero Delivery means
	// it was not evaluated and delivery is unknown.
	Artifacts ArtifactResult
}

// Result is the classification of one entity: health, delivery, the
// reasons behind them, and the observations themselves.
//
// Reasons hold only findings (anything but a plain running or ok entity,
// plus annotations such as slow or clock skew), so a healthy entity has
// none and costs no formatting. Evidence lists every observation.
//
// The probe keeps no memory between calls. A caller that debounces death
// (terminal_grace) records the first CheckedAt at which Liveness was Dead
// and acts only after the grace, on a fresh Dead.
type Result struct {
	Health   state.Health
	Delivery state.Delivery
	// Reasons explain health and delivery, in order: health and liveness
	// first, then slow and clock skew, then delivery. Nil when there are
	// none.
	Reasons []state.StateReason
	// Liveness is the entity's own process's, also for terminal entities.
	Liveness Liveness

	PID        PIDObservation
	Supervisor PIDObservation
	Heartbeat  HeartbeatObservation
	Locks      LockObservation
	Artifacts  ArtifactResult
	CheckedAt  time.Time

	// Classify first decides (findings), then formats (Reasons); the
	// fields below are what the formatting needs.
	findings           [maxFindings]finding
	nFindings          uint8
	terminal           bool
	th                 Thresholds
	startedAt, endedAt time.Time
}

// maxFindings bounds the findings of one result: a health reason,
// liveness_unknown, slow, clock_skew, stale_lock and a delivery reason
// (one of missing, partial, invalid, check_stopped).
const maxFindings = 6

// finding is one reason before formatting: its code and the observations
// it cites.
type finding struct {
	code state.ReasonCode
	ev   evidenceSet
}

// evidenceSet says which observations a finding cites, in this order.
type evidenceSet uint8

const (
	evPID          evidenceSet = 1 << iota
	evSupervisor               // the supervisor's pid check
	evHeartbeat                // the heartbeat, when its age is known
	evLocks                    // every lock file still present
	evArtifacts                // every failing artifact that counts (see artifactCited)
	evArtifactStop             // the bound that stopped the artifact check
)

// Classify judges observations: a pure function of them, the thresholds and
// now. Order of judgement (SPEC §6): liveness first, heartbeat staleness
// second, artifact evidence third.
//
// A non-terminal entity is, first match wins:
//
//   - Dead: process_dead, reason process_dead, pid_reused or host_rebooted;
//   - Alive, supervisor Dead or parent terminal: orphaned;
//   - Alive: stalled or idle by heartbeat age; else running, with reason
//     slow when it has run between slow_after and slow_until;
//   - Unknown on another host: running when the entity itself sent a fresh
//     heartbeat, else disconnected;
//   - Unknown here: stalled or idle by heartbeat age; running when the
//     entity itself sent a fresh heartbeat; else unknown. Reason
//     liveness_unknown in every case: an unknown is never process_dead.
//
// A stale heartbeat never makes an entity dead: a starved sender is the
// commonest false alarm. A heartbeat from the future adds clock_skew.
//
// A terminal entity is orphaned when its process, verified by start time,
// is still alive after its end; degraded when declared lock files remain;
// ok otherwise. Delivery is the artifact verdict, with a reason when it is
// missing, partial or invalid.
//
// Classify allocates only for the reasons it formats; a healthy entity
// costs nothing.
func Classify(obs Observations, th Thresholds, now time.Time) Result {
	var r Result
	r.classify(&obs, th, now)
	return r
}

// classify is Classify writing into r, so that Probe's observations are
// copied once, into the result, and not once more on the way.
func (r *Result) classify(obs *Observations, th Thresholds, now time.Time) {
	th = th.withDefaults()
	*r = Result{
		Liveness:   obs.PID.Liveness,
		PID:        obs.PID,
		Supervisor: obs.Supervisor,
		Heartbeat:  obs.Heartbeat,
		Locks:      obs.Locks,
		Artifacts:  obs.Artifacts,
		CheckedAt:  now,
		terminal:   obs.Terminal,
		th:         th,
		startedAt:  obs.StartedAt,
		endedAt:    obs.EndedAt,
	}
	if obs.Terminal {
		r.classifyEnded(obs)
	} else {
		r.classifyActive(obs)
	}
	r.classifyDelivery()
	r.Reasons = r.format()
}

func (r *Result) add(code state.ReasonCode, ev evidenceSet) {
	if int(r.nFindings) < maxFindings {
		r.findings[r.nFindings] = finding{code, ev}
		r.nFindings++
	}
}

func (r *Result) classifyActive(obs *Observations) {
	pid, hb, th := obs.PID, obs.Heartbeat, r.th
	switch pid.Liveness {
	case Dead:
		r.Health = state.HealthProcessDead
		r.add(pid.ReasonCode(), evPID|evHeartbeat)

	case Alive:
		switch {
		case obs.Supervisor.Liveness == Dead:
			r.Health = state.HealthOrphaned
			r.add(state.RunHealthOrphaned, evPID|evSupervisor)
		case obs.ParentTerminal:
			r.Health = state.HealthOrphaned
			r.add(state.RunHealthOrphaned, evPID)
		default:
			r.Health = r.judgeHeartbeat(hb, state.HealthRunning)
		}

	default: // Unknown
		if pid.OtherHost() {
			if hb.Real() && hb.Age < th.IdleAfter {
				r.Health = state.HealthRunning
			} else {
				r.Health = state.HealthDisconnected
				r.add(state.RunHealthDisconnected, evPID|evHeartbeat)
			}
		} else {
			r.add(state.RunHealthLivenessUnknown, evPID)
			fallback := state.HealthUnknown
			if hb.Real() {
				fallback = state.HealthRunning // the entity itself says it lives
			}
			r.Health = r.judgeHeartbeat(hb, fallback)
		}
	}

	if r.Health == state.HealthRunning && !obs.StartedAt.IsZero() {
		if ran := r.CheckedAt.Sub(obs.StartedAt); ran >= th.SlowAfter && ran < th.SlowUntil {
			r.add(state.RunHealthSlow, evPID|evHeartbeat)
		}
	}
	if hb.Skew > 0 {
		r.add(state.RunHealthClockSkew, evHeartbeat)
	}
}

// judgeHeartbeat returns stalled or idle by age (with the finding), or
// fresh when the heartbeat is younger than idle_after or its age unknown.
func (r *Result) judgeHeartbeat(hb HeartbeatObservation, fresh state.Health) state.Health {
	switch {
	case !hb.Known() || hb.Age < r.th.IdleAfter:
		return fresh
	case hb.Age >= r.th.StalledAfter:
		r.add(state.RunHealthStalled, evHeartbeat)
		return state.HealthStalled
	}
	r.add(state.RunHealthIdle, evHeartbeat)
	return state.HealthIdle
}

func (r *Result) classifyEnded(obs *Observations) {
	r.Health = state.HealthOK
	if obs.PID.IdentityVerified() {
		// Marking an entity ended does not stop its process: say so.
		r.Health = state.HealthOrphaned
		r.add(state.RunHealthOrphaned, evPID)
	}
	if len(obs.Locks.Present) > 0 {
		if r.Health == state.HealthOK {
			r.Health = state.HealthDegraded
		}
		r.add(state.RunHealthStaleLock, evLocks)
	}
}

func (r *Result) classifyDelivery() {
	r.Delivery = r.Artifacts.Delivery
	switch r.Delivery {
	case "":
		r.Delivery = state.DeliveryUnknown
	case state.DeliveryUnknown:
		// A check its caller interrupted found nothing about the entity;
		// one that hit its own bound did, and says which.
		if r.Artifacts.Stopped != "" && !r.Artifacts.Interrupted {
			r.add(state.RunDeliveryCheckStopped, evArtifactStop)
		}
	case state.DeliveryMissing:
		r.add(state.RunDeliveryMissing, evArtifacts)
	case state.DeliveryPartial:
		r.add(state.RunDeliveryPartial, evArtifacts)
	case state.DeliveryInvalid:
		r.add(state.RunDeliveryInvalid, evArtifacts)
	}
}

// artifactCited says whether a delivery reason cites the check: every
// required artifact that is not valid, and every invalid optional one.
func artifactCited(c ArtifactCheck) bool {
	return c.Status != ArtifactValid && (c.Spec.Required || c.Status == ArtifactInvalid)
}

// ReasonCodes lists the codes of the reasons, in order.
func (r Result) ReasonCodes() []state.ReasonCode {
	if len(r.Reasons) == 0 {
		return nil
	}
	out := make([]state.ReasonCode, len(r.Reasons))
	for i, reason := range r.Reasons {
		out[i] = reason.Code
	}
	return out
}

// HasReason reports whether code is among the reasons.
func (r Result) HasReason(code state.ReasonCode) bool {
	for _, reason := range r.Reasons {
		if reason.Code == code {
			return true
		}
	}
	return false
}

// format turns the findings into reasons with messages and evidence. The
// evidence of one result shares one FetchedAt, and each slice is allocated
// at its exact size: this runs for every unhealthy entity on every sweep.
func (r *Result) format() []state.StateReason {
	if r.nFindings == 0 {
		return nil
	}
	fetched := unixtime.Of(r.CheckedAt)
	out := make([]state.StateReason, 0, r.nFindings)
	for _, f := range r.findings[:r.nFindings] {
		out = append(out, state.Observed(f.code, r.message(f), r.evidence(f.ev, fetched)...))
	}
	return out
}

func (r *Result) evidence(set evidenceSet, fetched unixtime.Time) []state.EvidenceRef {
	hb := set&evHeartbeat != 0 && r.Heartbeat.Known()
	merged := set&evPID != 0 && hb // one line, as in SPEC §2's example
	n := 0
	if set&evPID != 0 {
		n++
	}
	if set&evSupervisor != 0 {
		n++
	}
	if hb && !merged {
		n++
	}
	if set&evLocks != 0 {
		n += len(r.Locks.Present)
	}
	if set&evArtifacts != 0 {
		for _, c := range r.Artifacts.Checks {
			if artifactCited(c) {
				n++
			}
		}
	}
	if set&evArtifactStop != 0 {
		n++
	}
	ev := make([]state.EvidenceRef, 0, n)
	switch {
	case merged:
		// "pid 4242 not running (no such process); last heartbeat 71m ago
		// (heartbeat file /run/agents/s-42.hb)": the pid check and the
		// heartbeat read together, at the cost of one evidence entry.
		b := r.PID.appendDetail(make([]byte, 0, 256))
		b = append(b, "; "...)
		b = r.Heartbeat.appendDetail(b)
		ev = append(ev, state.EvidenceRef{Kind: state.EvidenceToolResult, Detail: string(b), FetchedAt: fetched})
	case set&evPID != 0:
		ev = append(ev, r.PID.evidence(fetched))
	}
	if set&evSupervisor != 0 {
		ev = append(ev, r.Supervisor.evidence(fetched))
	}
	if hb && !merged {
		ev = append(ev, r.Heartbeat.evidence(fetched))
	}
	if set&evLocks != 0 {
		for _, l := range r.Locks.Present {
			ev = append(ev, l.evidence(fetched))
		}
	}
	if set&evArtifacts != 0 {
		for _, c := range r.Artifacts.Checks {
			if artifactCited(c) {
				ev = append(ev, c.evidence(fetched))
			}
		}
	}
	if set&evArtifactStop != 0 {
		ev = append(ev, r.Artifacts.stopEvidence(fetched))
	}
	return ev
}

// message is a finding's one-line explanation. It runs only for findings,
// that is for unhealthy entities, so it formats plainly.
func (r *Result) message(f finding) string {
	hb := r.Heartbeat
	switch f.code {
	case state.RunHealthProcessDead, state.RunHealthPIDReused, state.RunHealthHostRebooted:
		return deathMessage(r.PID)
	case state.RunHealthOrphaned:
		switch {
		case r.terminal && r.endedAt.IsZero():
			return "process still alive after the end was recorded"
		case r.terminal:
			return fmt.Sprintf("process still alive after the end was recorded (%s ago)", age(r.CheckedAt.Sub(r.endedAt)))
		case f.ev&evSupervisor != 0:
			return fmt.Sprintf("process alive but its supervisor (pid %d) is gone", r.Supervisor.Target.PID)
		}
		return "process alive but its parent entity has ended"
	case state.RunHealthDisconnected:
		return "process runs on another host and sent no fresh heartbeat"
	case state.RunHealthLivenessUnknown:
		return "liveness could not be decided: " + r.PID.Cause.String()
	case state.RunHealthIdle, state.RunHealthStalled:
		health, limit := "idle", r.th.IdleAfter
		if f.code == state.RunHealthStalled {
			health, limit = "stalled", r.th.StalledAfter
		}
		if hb.Real() {
			return fmt.Sprintf("no heartbeat for %s (%s after %s)", age(hb.Age), health, age(limit))
		}
		return fmt.Sprintf("no heartbeat since the start %s ago (%s after %s)", age(hb.Age), health, age(limit))
	case state.RunHealthSlow:
		return fmt.Sprintf("running for %s (slow after %s)", age(r.CheckedAt.Sub(r.startedAt)), age(r.th.SlowAfter))
	case state.RunHealthClockSkew:
		return fmt.Sprintf("heartbeat from %s in the future; clamped", age(hb.Skew))
	case state.RunHealthStaleLock:
		if n := len(r.Locks.Present); n > 1 {
			return fmt.Sprintf("%d declared lock files still exist after the end", n)
		}
		return "declared lock file still exists after the end"
	case state.RunDeliveryCheckStopped:
		return "artifact check stopped: " + r.Artifacts.Stopped + "; delivery unknown"
	case state.RunDeliveryMissing, state.RunDeliveryPartial, state.RunDeliveryInvalid:
		return r.deliveryMessage(f.code)
	}
	return string(f.code)
}

// deliveryMessage counts the contract's artifacts for a delivery finding.
func (r *Result) deliveryMessage(code state.ReasonCode) string {
	var required, valid, invalid int
	for _, c := range r.Artifacts.Checks {
		if c.Spec.Required {
			required++
			if c.Status == ArtifactValid {
				valid++
			}
		}
		if c.Status == ArtifactInvalid {
			invalid++
		}
	}
	switch {
	case code == state.RunDeliveryMissing && required == 1:
		return "the required artifact is not present"
	case code == state.RunDeliveryMissing:
		return fmt.Sprintf("none of the %d required artifacts is present", required)
	case code == state.RunDeliveryPartial:
		return fmt.Sprintf("%d of %d required artifacts valid", valid, required)
	}
	return fmt.Sprintf("%d artifact(s) present but invalid", invalid)
}

func deathMessage(o PIDObservation) string {
	switch o.Cause {
	case CausePIDReused:
		return fmt.Sprintf("pid %d now belongs to another process", o.Target.PID)
	case CauseHostRebooted:
		return "host rebooted since the process started"
	case CauseZombie:
		return "process is gone (zombie)"
	case CauseVanished:
		return "process is gone (vanished during the probe)"
	}
	return "process is gone (no such process)"
}

// age is a duration as messages show it ("71m"): appendAge's format.
func age(d time.Duration) string { return string(appendAge(nil, d)) }

// Evidence lists what every check saw, findings or not: the pid, the
// supervisor, the heartbeat, the remaining lock files and each artifact.
// It is for display (the CLI's evidence lines); Reasons carry the evidence
// of the findings.
func (r Result) Evidence() []state.EvidenceRef {
	now := unixtime.Of(r.CheckedAt)
	ev := []state.EvidenceRef{r.PID.evidence(now)}
	if r.Supervisor.Checked() {
		ev = append(ev, r.Supervisor.evidence(now))
	}
	if r.Heartbeat.Known() || r.Heartbeat.File != "" {
		ev = append(ev, r.Heartbeat.evidence(now))
	}
	for _, l := range r.Locks.Present {
		ev = append(ev, l.evidence(now))
	}
	for _, c := range r.Artifacts.Checks {
		ev = append(ev, c.evidence(now))
	}
	if r.Artifacts.Stopped != "" {
		ev = append(ev, r.Artifacts.stopEvidence(now))
	}
	return ev
}
