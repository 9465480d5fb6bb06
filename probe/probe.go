// Package probe observes processes, heartbeats, lock files and artifacts
// and classifies them into health, delivery, reasons and evidence
// (docs/reference/state-model.md, Probing).
//
// One file per check kind: pid.go (liveness with identity), heartbeat.go,
// locks.go, artifacts.go; each does its syscalls and returns a plain
// observation. classify.go turns observations into a Result with a pure
// function of the observations, the thresholds and the time. Probe runs the
// checks for one entity and classifies them.
//
// The probe observes and records; it never acts. Ending an entity, reaping
// it or killing a process is another loop's decision, taken on the Result
// (and only on a conclusive Dead, never on Unknown).
//
// Blind spots, stated so that nobody relies on them:
//   - a pid recorded without a start time cannot be told from a newcomer
//     that reused it: it reads Alive (CauseIdentityUnset), and a terminal
//     entity with such a pid is never called orphaned;
//   - pids are those of the watchdog's pid namespace: a process registered
//     from another namespace (a container) reads as another process or as
//     gone;
//   - an artifact check over one of its bounds (state.MaxArtifact*) reads
//     delivery unknown, not what the files would have said.
package probe

import (
	"context"
	"time"

	"watchdog/state"
)

// Subject is everything the probe needs to know about one entity. A zero
// time means unknown or none.
type Subject struct {
	// The entity's own process and its recorded identity.
	PID        int
	StartTime  time.Time
	StartTicks uint64
	HostID     string
	BootID     string
	// Exit is how the process ended when the kernel said so (nil = not
	// known): the evidence of a dead process names it.
	Exit *state.ExitStatus
	// Died: the kernel reported the process's exit (PIDSubject.Died);
	// Watched: its pidfd says it is alive (PIDSubject.Watched).
	Died, Watched bool
	// Gone says the process is not expected to run (recorded dead, or its
	// entity ended): its pid is asked of the kernel first, one syscall for
	// the usual "no such process" where /proc takes two. The answer is
	// the same either way.
	Gone bool
	// SupervisorPID is the process watching this one (an orchestrator, a
	// `watchdog exec`); 0 = none. SupervisorStartTime, when known, tells it
	// from a newcomer reusing its pid.
	SupervisorPID       int
	SupervisorStartTime time.Time

	// HeartbeatFile is a file whose mtime is the heartbeat ("" = none);
	// HeartbeatAt is the latest heartbeat posted to the API or CLI, with
	// its progress note.
	HeartbeatFile     string
	HeartbeatAt       time.Time
	HeartbeatProgress string
	// NoHeartbeat says the entity has no heartbeat at all, so its staleness
	// is not judged (an ad-hoc probe of a bare pid).
	NoHeartbeat bool
	// HeartbeatRequired says the entity is expected to heartbeat from its
	// start (its type is in thresholds.require_heartbeat): with no source
	// yet it ages from its start. Otherwise only a heartbeat file or a
	// posted heartbeat turns ageing on: an entity with neither is judged
	// on liveness alone, as nothing could have heartbeated for it
	// (docs/reference/state-model.md, Probing).
	HeartbeatRequired bool

	// StartedAt is when the entity started; zero falls back to StartTime.
	StartedAt time.Time
	// Terminal: the entity has ended, EndedAt when (zero = unknown).
	Terminal bool
	EndedAt  time.Time
	// EndedByDeath, Waiting and StateSince are as in Observations: what
	// the entity's type and its last transition say (the caller knows its
	// graph; the probe does not).
	EndedByDeath bool
	Waiting      bool
	StateSince   time.Time
	// ParentTerminal: the parent entity has ended.
	ParentTerminal bool

	// ArtifactsRoot and Artifacts are the artifact contract.
	ArtifactsRoot string
	Artifacts     []state.ArtifactSpec
	// SkipArtifacts leaves a contract's delivery unknown (not evaluated)
	// without touching the file system, e.g. for a running entity whose
	// outputs are not due. Without a contract delivery is not_expected.
	SkipArtifacts bool

	// LockFiles are the declared lock files, checked once the entity ended.
	LockFiles []string
	// Owner is whose rights the heartbeat file, the lock files and the
	// artifacts are examined with (AsOwner).
	Owner Owner
}

// readsFiles says whether probing t reads a file: a heartbeat file while
// it runs, lock files once it ended, an artifact contract when due.
func (t *Subject) readsFiles() bool {
	return t.HeartbeatFile != "" || (t.Terminal && len(t.LockFiles) > 0) || (len(t.Artifacts) > 0 && !t.SkipArtifacts)
}

// Unread is what Probe would return for t when it has nothing to read:
// its process reported dead by the kernel (Died) and no file due. ok is
// false when t needs a look (Probe).
func Unread(t Subject, th Thresholds, now time.Time) (r Result, ok bool) {
	if !t.Died || t.PID <= 0 || t.readsFiles() {
		return Result{}, false
	}
	return (&Host{}).Probe(context.Background(), t, th, now), true
}

// checkFiles is Probe's look at t's files: the heartbeat file while it
// runs, the lock files once it ended, the artifact contract when due.
func checkFiles(ctx context.Context, t *Subject, obs *Observations, started, now time.Time) {
	if !t.Terminal {
		if !t.NoHeartbeat {
			from := started // the heartbeat that never came ages from the start
			if t.HeartbeatFile == "" && !t.HeartbeatRequired {
				from = time.Time{}
			}
			obs.Heartbeat = CheckHeartbeat(t.HeartbeatFile, t.HeartbeatAt, from, now)
			if obs.Heartbeat.Source == HeartbeatPosted {
				obs.Heartbeat.Progress = t.HeartbeatProgress
			}
		}
	} else if len(t.LockFiles) > 0 {
		obs.Locks = CheckLocks(t.ArtifactsRoot, t.LockFiles)
	}
	switch {
	case len(t.Artifacts) == 0:
		// No contract: nothing is expected, running or not (docs/reference/state-model.md, Probing), and
		// nothing to read.
		obs.Artifacts = ArtifactResult{Delivery: state.DeliveryNotExpected}
	case !t.SkipArtifacts:
		obs.Artifacts = CheckArtifacts(ctx, t.ArtifactsRoot, t.Artifacts, started)
	}
}

// Probe runs every check the Subject calls for and classifies the observations
// (see Classify). Checks that cannot matter are skipped: the supervisor is
// checked only while the entity's own process is alive and not ended,
// heartbeats only while it has not ended, lock files only after.
//
// Probe is the sweep's hot path. On a healthy entity it allocates only the
// artifact result, and formats no evidence (Reasons are empty; Result's
// Evidence formats on demand).
//
// ctx bounds the artifact check (besides its own bounds, see
// CheckArtifacts); the process and heartbeat checks are a few syscalls
// each and do not look at it.
func (h *Host) Probe(ctx context.Context, t Subject, th Thresholds, now time.Time) Result {
	sc := getScratch()
	defer putScratch(sc)

	started := t.StartedAt
	if started.IsZero() {
		started = t.StartTime
	}
	obs := Observations{
		Terminal:       t.Terminal,
		EndedByDeath:   t.EndedByDeath,
		Waiting:        t.Waiting,
		StateSince:     t.StateSince,
		ParentTerminal: t.ParentTerminal,
		StartedAt:      started,
		EndedAt:        t.EndedAt,
	}
	obs.PID = h.checkPID(PIDSubject{PID: t.PID, StartTime: t.StartTime, StartTicks: t.StartTicks, HostID: t.HostID, BootID: t.BootID, Exit: t.Exit, Died: t.Died, Watched: t.Watched}, t.Gone, sc)
	if !t.Terminal {
		if t.SupervisorPID > 0 && obs.PID.Liveness == Alive {
			obs.Supervisor = h.checkPID(PIDSubject{PID: t.SupervisorPID, StartTime: t.SupervisorStartTime, HostID: t.HostID, BootID: t.BootID}, false, sc)
		}
	}
	// The files as their owner may see them, in one switch of identity
	// (none for an entity with no file or no proven owner). The copies
	// keep the common path free of allocations: only the switch's branch
	// hands them to another goroutine.
	files := t.readsFiles()
	if !files || !t.Owner.Known {
		checkFiles(ctx, &t, &obs, started, now)
	} else {
		st, so := t, obs
		if AsOwner(t.Owner, func() { checkFiles(ctx, &st, &so, started, now) }) {
			obs = so
		} else {
			// Not examined: the posted heartbeat stands, as for a reader.
			if !t.Terminal && !t.NoHeartbeat {
				obs.Heartbeat = CheckHeartbeat("", t.HeartbeatAt, started, now) // a file declared: ageing is on
			}
			obs.Artifacts = ArtifactResult{Delivery: state.DeliveryUnknown}
		}
	}
	var r Result
	r.classify(&obs, th, now)
	return r
}
