package probe

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"watchdog/internal/unixtime"
	"watchdog/state"
)

// Thresholds are the ages and durations the classification compares with
// (docs/reference/state-model.md, Probing; config `thresholds.*`).
type Thresholds struct {
	// IdleAfter: a heartbeat at least this old makes a live entity idle.
	IdleAfter time.Duration
	// StalledAfter: a heartbeat at least this old makes it stalled.
	StalledAfter time.Duration
	// SlowAfter and SlowUntil bound the running time that gets run.health.slow.
	SlowAfter time.Duration
	SlowUntil time.Duration
	// RequireHeartbeat are the entity types expected to heartbeat from their
	// start; any other type with no source is judged on liveness alone.
	RequireHeartbeat []string
}

// Requires says whether entities of typ are expected to heartbeat from
// their start.
func (t Thresholds) Requires(typ string) bool { return slices.Contains(t.RequireHeartbeat, typ) }

// DefaultThresholds are the config's defaults (docs/reference/config.md).
var DefaultThresholds = Thresholds{
	IdleAfter:    10 * time.Minute,
	StalledAfter: 60 * time.Minute,
	SlowAfter:    60 * time.Minute,
	SlowUntil:    3 * time.Hour,
}

// WithDefaults is t with every unset threshold at its default; callers
// timing the same judgements must use it too.
func (t Thresholds) WithDefaults() Thresholds {
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
	// EndedByDeath: the watchdog ended the entity because its process died; its
	// health stays process_dead.
	EndedByDeath bool
	// Waiting: not in a working state, so the heartbeat's age is not judged.
	Waiting bool
	// StateSince: a heartbeat ages from no earlier than this, so a restart is
	// not stalled by the silence before it.
	StateSince time.Time
	// PID is the check of the entity's own process.
	PID PIDObservation
	// Supervisor is the check of its supervisor's process; a zero
	// Subject.PID means none was declared or checked.
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

// Result is the classification of one entity. Reasons hold only findings,
// so a healthy entity costs no formatting; the probe keeps no memory between calls.
type Result struct {
	Health   state.Health
	Delivery state.Delivery
	// Reasons explain health and delivery, health first; nil when there are none.
	Reasons []state.StateReason
	// Liveness is the entity's own process's, also for terminal entities.
	Liveness Liveness

	PID        PIDObservation
	Supervisor PIDObservation
	Heartbeat  HeartbeatObservation
	Locks      LockObservation
	Artifacts  ArtifactResult
	CheckedAt  time.Time
}

// cites names the observations a finding rests on; its evidence lists
// them in this order.
type cites struct {
	pid, supervisor bool
	heartbeat       bool // cited only when its age is known
	locks           bool // every lock file still present
	artifacts       bool // every failing artifact that counts (see artifactCited)
	artifactStop    bool // the bound that stopped the artifact check
}

// Classify judges observations, a pure function of them, the thresholds and
// now (docs/reference/state-model.md, Probing). A stale heartbeat never makes
// an entity dead, and an unknown liveness is never process_dead.
func Classify(obs Observations, th Thresholds, now time.Time) Result {
	var r Result
	r.classify(&obs, th, now)
	return r
}

// classify is Classify writing into r, so that Probe's observations are
// copied once, into the result, and not once more on the way.
func (r *Result) classify(obs *Observations, th Thresholds, now time.Time) {
	*r = Result{
		Liveness:   obs.PID.Liveness,
		PID:        obs.PID,
		Supervisor: obs.Supervisor,
		Heartbeat:  obs.Heartbeat,
		Locks:      obs.Locks,
		Artifacts:  obs.Artifacts,
		CheckedAt:  now,
	}
	c := classifier{r: r, obs: obs, th: th.WithDefaults()}
	if obs.Terminal {
		c.classifyEnded()
	} else {
		c.classifyActive()
	}
	c.classifyDelivery()
}

// classifier decides one Result. Each finding is formatted where it is
// decided; only findings format, so a healthy entity formats nothing.
type classifier struct {
	r   *Result
	obs *Observations
	th  Thresholds
}

// add appends a finding to the reasons, with its message and the evidence
// of what it cites.
func (c *classifier) add(code state.ReasonCode, message string, on cites) {
	c.r.Reasons = append(c.r.Reasons, state.Observed(code, message, c.r.evidence(on)...))
}

func (c *classifier) classifyActive() {
	r, obs, th := c.r, c.obs, c.th
	pid, hb := obs.PID, obs.Heartbeat
	switch pid.Liveness {
	case Dead:
		r.Health = state.HealthProcessDead
		c.addDeath()

	case Alive:
		switch {
		case obs.Supervisor.Liveness == Dead:
			r.Health = state.HealthOrphaned
			c.add(state.RunHealthOrphaned, fmt.Sprintf("process alive but its supervisor (pid %d) is gone", obs.Supervisor.Subject.PID), cites{pid: true, supervisor: true})
		case obs.ParentTerminal:
			r.Health = state.HealthOrphaned
			c.add(state.RunHealthOrphaned, "process alive but its parent entity has ended", cites{pid: true})
		default:
			r.Health = c.judgeHeartbeat(state.HealthRunning)
		}

	default: // Unknown
		if pid.OtherHost() {
			if hb.Real() && hb.Age < th.IdleAfter {
				r.Health = state.HealthRunning
			} else {
				r.Health = state.HealthDisconnected
				c.add(state.RunHealthDisconnected, "process runs on another host and sent no fresh heartbeat", cites{pid: true, heartbeat: true})
			}
		} else {
			c.add(state.RunHealthLivenessUnknown, "liveness could not be decided: "+pid.Cause.String(), cites{pid: true})
			fallback := state.HealthUnknown
			if hb.Real() {
				fallback = state.HealthRunning // the entity itself says it lives
			}
			r.Health = c.judgeHeartbeat(fallback)
		}
	}

	if r.Health == state.HealthRunning && !obs.Waiting && !obs.StartedAt.IsZero() {
		if ran := r.CheckedAt.Sub(obs.StartedAt); ran >= th.SlowAfter && ran < th.SlowUntil {
			c.addSince(state.RunHealthSlow, fmt.Sprintf("slow after %s; running since %s", age(th.SlowAfter), state.Stamp(obs.StartedAt)), obs.StartedAt, cites{pid: true, heartbeat: true})
		}
	}
	if hb.Skew > 0 {
		c.add(state.RunHealthClockSkew, fmt.Sprintf("heartbeat time %s is in the future; clamped", state.Stamp(hb.Claimed)), cites{heartbeat: true})
	}
}

// addSince names the moment and carries it as Since, so the stored message
// stays true and readers render the age.
func (c *classifier) addSince(code state.ReasonCode, message string, since time.Time, on cites) {
	c.add(code, message, on)
	c.r.Reasons[len(c.r.Reasons)-1].Since = unixtime.Of(since)
}

// judgeHeartbeat returns stalled or idle by age, else fresh; always fresh
// for an entity that is waiting.
func (c *classifier) judgeHeartbeat(fresh state.Health) state.Health {
	hb, obs := c.obs.Heartbeat, c.obs
	if !hb.Known() || obs.Waiting {
		return fresh
	}
	at, ago := hb.At, hb.Age
	fromState := obs.StateSince.After(at)
	if fromState {
		at, ago = obs.StateSince, c.r.CheckedAt.Sub(obs.StateSince)
	}
	if ago < c.th.IdleAfter {
		return fresh
	}
	health, code, limit := state.HealthIdle, state.RunHealthIdle, c.th.IdleAfter
	if ago >= c.th.StalledAfter {
		health, code, limit = state.HealthStalled, state.RunHealthStalled, c.th.StalledAfter
	}
	var since string
	switch {
	case fromState:
		since = "none since its current state began at "
	case hb.Real():
		since = "none since "
	default:
		since = "none since the start at "
	}
	c.addSince(code, fmt.Sprintf("%s after %s without a heartbeat; %s%s", health, age(limit), since, state.Stamp(at)), at, cites{heartbeat: true})
	return health
}

func (c *classifier) classifyEnded() {
	r, obs := c.r, c.obs
	r.Health = state.HealthOK
	switch {
	case obs.PID.IdentityVerified():
		// Marking an entity ended does not stop its process: say so.
		r.Health = state.HealthOrphaned
		if obs.EndedAt.IsZero() {
			c.add(state.RunHealthOrphaned, "process still alive after the end was recorded", cites{pid: true})
		} else {
			c.addSince(state.RunHealthOrphaned, "process still alive after the end recorded at "+state.Stamp(obs.EndedAt), obs.EndedAt, cites{pid: true})
		}
	case obs.EndedByDeath:
		// Ended because its process died: the death is why, and stays
		// the health (never "Aborted · Infra OK").
		r.Health = state.HealthProcessDead
		if obs.PID.Liveness == Dead {
			c.addDeath()
		}
	}
	if n := len(obs.Locks.Present); n > 0 {
		if r.Health == state.HealthOK {
			r.Health = state.HealthDegraded
		}
		msg := "declared lock file still exists after the end"
		if n > 1 {
			msg = fmt.Sprintf("%d declared lock files still exist after the end", n)
		}
		c.add(state.RunHealthStaleLock, msg, cites{locks: true})
	}
}

func (c *classifier) classifyDelivery() {
	r := c.r
	r.Delivery = r.Artifacts.Delivery
	switch r.Delivery {
	case "":
		r.Delivery = state.DeliveryUnknown
	case state.DeliveryUnknown:
		// A check its caller interrupted found nothing about the entity;
		// one that hit its own bound did, and says which.
		if r.Artifacts.Stopped != "" && !r.Artifacts.Interrupted {
			c.add(state.RunDeliveryCheckStopped, "artifact check stopped: "+r.Artifacts.Stopped+"; delivery unknown", cites{artifactStop: true})
		}
	case state.DeliveryMissing:
		c.add(state.RunDeliveryMissing, r.Artifacts.deliveryMessage(r.Delivery), cites{artifacts: true})
	case state.DeliveryPartial:
		c.add(state.RunDeliveryPartial, r.Artifacts.deliveryMessage(r.Delivery), cites{artifacts: true})
	case state.DeliveryInvalid:
		c.add(state.RunDeliveryInvalid, r.Artifacts.deliveryMessage(r.Delivery), cites{artifacts: true})
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

// evidence is a finding's evidence: what it cites, in the order of cites.
func (r *Result) evidence(on cites) []state.EvidenceRef {
	fetched := unixtime.Of(r.CheckedAt)
	hb := on.heartbeat && r.Heartbeat.Known()
	var ev []state.EvidenceRef
	switch {
	case on.pid && hb:
		// The pid check and the heartbeat read together.
		detail, times := pidAndHeartbeat(r.PID, r.Heartbeat)
		ev = append(ev, state.EvidenceRef{Kind: state.EvidenceToolResult, Detail: detail, FetchedAt: fetched, Times: times})
	case on.pid:
		ev = append(ev, r.PID.evidence(fetched))
	}
	if on.supervisor {
		ev = append(ev, r.Supervisor.evidence(fetched))
	}
	if hb && !on.pid {
		ev = append(ev, r.Heartbeat.evidence(fetched))
	}
	if on.locks {
		for _, l := range r.Locks.Present {
			ev = append(ev, l.evidence(fetched))
		}
	}
	if on.artifacts {
		for _, c := range r.Artifacts.Checks {
			if artifactCited(c) {
				ev = append(ev, c.evidence(fetched))
			}
		}
	}
	if on.artifactStop {
		ev = append(ev, r.Artifacts.stopEvidence(fetched))
	}
	return ev
}

// deliveryMessage counts the contract's artifacts and names the ones at fault.
func (a ArtifactResult) deliveryMessage(d state.Delivery) string {
	var required, valid int
	var absent, bad []string
	for _, c := range a.Checks {
		if c.Spec.Required {
			required++
			if c.Status == ArtifactValid {
				valid++
			} else if c.Status != ArtifactInvalid {
				absent = append(absent, c.Spec.Path)
			}
		}
		if c.Status == ArtifactInvalid {
			bad = append(bad, c.Spec.Path)
		}
	}
	switch {
	case d == state.DeliveryMissing && required == 1 && len(absent) == 1:
		return "the required artifact " + absent[0] + " is not present"
	case d == state.DeliveryMissing:
		return fmt.Sprintf("none of the %d required artifacts is present (%s)", required, nameFew(absent))
	case d == state.DeliveryPartial && len(absent) > 0:
		return fmt.Sprintf("%d of %d required artifacts valid; not present: %s", valid, required, nameFew(absent))
	case d == state.DeliveryPartial:
		return fmt.Sprintf("%d of %d required artifacts valid", valid, required)
	}
	return fmt.Sprintf("%d artifact(s) present but invalid (%s)", len(bad), nameFew(bad))
}

// nameFew lists up to three names, then how many more.
func nameFew(names []string) string {
	const show = 3
	if len(names) <= show {
		return strings.Join(names, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(names[:show], ", "), len(names)-show)
}

// addDeath adds the finding of a dead process, with the time of death
// when the kernel told it.
func (c *classifier) addDeath() {
	pid := c.obs.PID
	on := cites{pid: true, heartbeat: !c.obs.Terminal}
	if x := pid.Subject.Exit; x != nil && !x.At.IsZero() && pid.Cause != CauseHostRebooted {
		c.addSince(pid.ReasonCode(), deathMessage(pid)+"; dead since "+state.Stamp(x.At), x.At, on)
		return
	}
	c.add(pid.ReasonCode(), deathMessage(pid), on)
}

func deathMessage(o PIDObservation) string {
	if x := o.Subject.Exit; x != nil && o.Cause != CauseHostRebooted {
		// How it ended is the news; the cause stays in the evidence.
		return "process " + x.How()
	}
	switch o.Cause {
	case CausePIDReused:
		return fmt.Sprintf("pid %d now belongs to another process", o.Subject.PID)
	case CauseHostRebooted:
		return "host rebooted since the process started"
	case CauseZombie:
		return "process is gone (zombie)"
	case CauseVanished:
		return "process is gone (vanished during the probe)"
	}
	return "process is gone (no such process)"
}

// Evidence lists what every check saw, findings or not, for display.
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

// pidAndHeartbeat builds in one stack buffer: it runs for every dead entity
// on every sweep until it is ended.
func pidAndHeartbeat(pid PIDObservation, hb HeartbeatObservation) (string, []state.EvidenceTime) {
	var buf [256]byte
	var m timeMarks
	b := pid.writeDetail(buf[:0], &m)
	return m.done(hb.writeDetail(append(b, "; "...), &m))
}
