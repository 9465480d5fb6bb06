package probe

import (
	"time"

	"watchdog/internal/unixtime"
	"watchdog/state"
)

// Observations are everything seen of one entity, with the facts of the
// subject it was seen as: the probe's output and judge.Classify's input. The
// probe decides nothing; what they mean is the judge's.
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
	// CheckedAt is when they were seen.
	CheckedAt time.Time
}

// Cites names the sightings a finding rests on; Cited lists their evidence
// in this order.
type Cites struct {
	PID, Supervisor bool
	Heartbeat       bool // cited only when its age is known
	Locks           bool // every lock file still present
	Artifacts       bool // every failing artifact that counts (see artifactCited)
	ArtifactStop    bool // the bound that stopped the artifact check
}

// Cited is a finding's evidence: the sightings it cites, in the order of Cites.
func (r *Observations) Cited(on Cites) []state.EvidenceRef {
	fetched := unixtime.Of(r.CheckedAt)
	hb := on.Heartbeat && r.Heartbeat.Known()
	var ev []state.EvidenceRef
	switch {
	case on.PID && hb:
		// The pid check and the heartbeat read together.
		detail, times := pidAndHeartbeat(r.PID, r.Heartbeat)
		ev = append(ev, state.EvidenceRef{Kind: state.EvidenceToolResult, Detail: detail, FetchedAt: fetched, Times: times})
	case on.PID:
		ev = append(ev, r.PID.evidence(fetched))
	}
	if on.Supervisor {
		ev = append(ev, r.Supervisor.evidence(fetched))
	}
	if hb && !on.PID {
		ev = append(ev, r.Heartbeat.evidence(fetched))
	}
	if on.Locks {
		for _, l := range r.Locks.Present {
			ev = append(ev, l.evidence(fetched))
		}
	}
	if on.Artifacts {
		for _, c := range r.Artifacts.Checks {
			if artifactCited(c) {
				ev = append(ev, c.evidence(fetched))
			}
		}
	}
	if on.ArtifactStop {
		ev = append(ev, r.Artifacts.stopEvidence(fetched))
	}
	return ev
}

// artifactCited says whether a delivery reason cites the check: every
// required artifact that is not valid, and every invalid optional one.
func artifactCited(c ArtifactCheck) bool {
	return c.Status != ArtifactValid && (c.Spec.Required || c.Status == ArtifactInvalid)
}

// Evidence lists what every check saw, findings or not, for display.
func (r *Observations) Evidence() []state.EvidenceRef {
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
