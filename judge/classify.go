package judge

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"watchdog/internal/unixtime"
	"watchdog/probe"
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

// Result is the classification of one entity with the observations it
// rests on. Reasons hold only findings, so a healthy entity costs no formatting.
type Result struct {
	Health   state.Health
	Delivery state.Delivery
	// Reasons explain health and delivery, health first; nil when there are none.
	Reasons []state.StateReason
	// Liveness is the entity's own process's, also for terminal entities.
	Liveness probe.Liveness
	probe.Observations
}

// Classify judges observations, a pure function of them, the thresholds and
// now (docs/reference/state-model.md, Probing). A stale heartbeat never makes
// an entity dead, and an unknown liveness is never process_dead.
func Classify(obs probe.Observations, th Thresholds, now time.Time) Result {
	r := Result{Liveness: obs.PID.Liveness, Observations: obs}
	r.CheckedAt = now
	c := classifier{r: &r, obs: &r.Observations, th: th.WithDefaults()}
	if obs.Terminal {
		c.classifyEnded()
	} else {
		c.classifyActive()
	}
	c.classifyDelivery()
	return r
}

// classifier decides one Result. Each finding is formatted where it is
// decided; only findings format, so a healthy entity formats nothing.
type classifier struct {
	r   *Result
	obs *probe.Observations
	th  Thresholds
}

// add appends a finding to the reasons, with its message and the evidence
// of what it cites.
func (c *classifier) add(code state.ReasonCode, message string, on probe.Cites) {
	c.r.Reasons = append(c.r.Reasons, state.Observed(code, message, c.obs.Cited(on)...))
}

func (c *classifier) classifyActive() {
	r, obs, th := c.r, c.obs, c.th
	pid, hb := obs.PID, obs.Heartbeat
	switch pid.Liveness {
	case probe.Dead:
		r.Health = state.HealthProcessDead
		c.addDeath()

	case probe.Alive:
		switch {
		case obs.Supervisor.Liveness == probe.Dead:
			r.Health = state.HealthOrphaned
			c.add(state.RunHealthOrphaned, fmt.Sprintf("process alive but its supervisor (pid %d) is gone", obs.Supervisor.Subject.PID), probe.Cites{PID: true, Supervisor: true})
		case obs.ParentTerminal:
			r.Health = state.HealthOrphaned
			c.add(state.RunHealthOrphaned, "process alive but its parent entity has ended", probe.Cites{PID: true})
		default:
			r.Health = c.judgeHeartbeat(state.HealthRunning)
		}

	default: // probe.Unknown
		if pid.OtherHost() {
			if hb.Real() && hb.Age < th.IdleAfter {
				r.Health = state.HealthRunning
			} else {
				r.Health = state.HealthDisconnected
				c.add(state.RunHealthDisconnected, "process runs on another host and sent no fresh heartbeat", probe.Cites{PID: true, Heartbeat: true})
			}
		} else {
			c.add(state.RunHealthLivenessUnknown, "liveness could not be decided: "+pid.Cause.String(), probe.Cites{PID: true})
			fallback := state.HealthUnknown
			if hb.Real() {
				fallback = state.HealthRunning // the entity itself says it lives
			}
			r.Health = c.judgeHeartbeat(fallback)
		}
	}

	if r.Health == state.HealthRunning && !obs.Waiting && !obs.StartedAt.IsZero() {
		if ran := r.CheckedAt.Sub(obs.StartedAt); ran >= th.SlowAfter && ran < th.SlowUntil {
			c.addSince(state.RunHealthSlow, fmt.Sprintf("slow after %s; running since %s", thresholdAge(th.SlowAfter), state.Stamp(obs.StartedAt)), obs.StartedAt, probe.Cites{PID: true, Heartbeat: true})
		}
	}
	if hb.Skew > 0 {
		c.add(state.RunHealthClockSkew, fmt.Sprintf("heartbeat time %s is in the future; clamped", state.Stamp(hb.Claimed)), probe.Cites{Heartbeat: true})
	}
}

// addSince names the moment and carries it as Since, so the stored message
// stays true and readers render the age.
func (c *classifier) addSince(code state.ReasonCode, message string, since time.Time, on probe.Cites) {
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
	at, fromState := agesFrom(hb.At, obs.StateSince)
	ago := hb.Age
	if fromState {
		ago = c.r.CheckedAt.Sub(at)
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
	c.addSince(code, fmt.Sprintf("%s after %s without a heartbeat; %s%s", health, thresholdAge(limit), since, state.Stamp(at)), at, probe.Cites{Heartbeat: true})
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
			c.add(state.RunHealthOrphaned, "process still alive after the end was recorded", probe.Cites{PID: true})
		} else {
			c.addSince(state.RunHealthOrphaned, "process still alive after the end recorded at "+state.Stamp(obs.EndedAt), obs.EndedAt, probe.Cites{PID: true})
		}
	case obs.EndedByDeath:
		// Ended because its process died: the death is why, and stays
		// the health (never "Aborted · Infra OK").
		r.Health = state.HealthProcessDead
		if obs.PID.Liveness == probe.Dead {
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
		c.add(state.RunHealthStaleLock, msg, probe.Cites{Locks: true})
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
			c.add(state.RunDeliveryCheckStopped, "artifact check stopped: "+r.Artifacts.Stopped+"; delivery unknown", probe.Cites{ArtifactStop: true})
		}
	case state.DeliveryMissing:
		c.add(state.RunDeliveryMissing, deliveryMessage(r.Artifacts, r.Delivery), probe.Cites{Artifacts: true})
	case state.DeliveryPartial:
		c.add(state.RunDeliveryPartial, deliveryMessage(r.Artifacts, r.Delivery), probe.Cites{Artifacts: true})
	case state.DeliveryInvalid:
		c.add(state.RunDeliveryInvalid, deliveryMessage(r.Artifacts, r.Delivery), probe.Cites{Artifacts: true})
	}
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

// deliveryMessage counts the contract's artifacts and names the ones at fault.
func deliveryMessage(a probe.ArtifactResult, d state.Delivery) string {
	var required, valid int
	var absent, bad []string
	for _, c := range a.Checks {
		if c.Spec.Required {
			required++
			if c.Status == probe.ArtifactValid {
				valid++
			} else if c.Status != probe.ArtifactInvalid {
				absent = append(absent, c.Spec.Path)
			}
		}
		if c.Status == probe.ArtifactInvalid {
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
	on := probe.Cites{PID: true, Heartbeat: !c.obs.Terminal}
	if x := pid.Subject.Exit; x != nil && !x.At.IsZero() && pid.Cause != probe.CauseHostRebooted {
		c.addSince(deathCode(pid), deathMessage(pid)+"; dead since "+state.Stamp(x.At), x.At, on)
		return
	}
	c.add(deathCode(pid), deathMessage(pid), on)
}

func deathMessage(o probe.PIDObservation) string {
	if x := o.Subject.Exit; x != nil && o.Cause != probe.CauseHostRebooted {
		// How it ended is the news; the cause stays in the evidence.
		return "process " + x.How()
	}
	switch o.Cause {
	case probe.CausePIDReused:
		return fmt.Sprintf("pid %d now belongs to another process", o.Subject.PID)
	case probe.CauseHostRebooted:
		return "host rebooted since the process started"
	case probe.CauseZombie:
		return "process is gone (zombie)"
	case probe.CauseVanished:
		return "process is gone (vanished during the probe)"
	}
	return "process is gone (no such process)"
}

// deathCode is the health reason a dead process stands for: pid_reused,
// host_rebooted, or process_dead.
func deathCode(o probe.PIDObservation) state.ReasonCode {
	switch o.Cause {
	case probe.CausePIDReused:
		return state.RunHealthPIDReused
	case probe.CauseHostRebooted:
		return state.RunHealthHostRebooted
	}
	return state.RunHealthProcessDead
}

// thresholdAge renders a threshold in a finding's message: 45s, 71m, 5h, 3d.
// Stored messages keep this format; state.FormatAge is the tables' coarser one.
func thresholdAge(d time.Duration) string {
	var b []byte
	switch {
	case d < 2*time.Minute:
		b = append(strconv.AppendInt(b, int64(d/time.Second), 10), 's')
	case d < 3*time.Hour:
		b = append(strconv.AppendInt(b, int64(d/time.Minute), 10), 'm')
	case d < 72*time.Hour:
		b = append(strconv.AppendInt(b, int64(d/time.Hour), 10), 'h')
	default:
		b = append(strconv.AppendInt(b, int64(d/(24*time.Hour)), 10), 'd')
	}
	return string(b)
}
