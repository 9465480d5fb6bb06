// Package probe observes processes, heartbeats, lock files and artifacts and
// describes what it saw as evidence. It decides nothing (package judge
// classifies) and never acts (docs/reference/state-model.md, Probing).
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
	// Gone says the process is not expected to run: the kernel is asked first, one syscall.
	Gone bool
	// SupervisorPID is the process watching this one; 0 = none.
	SupervisorPID       int
	SupervisorStartTime time.Time

	// HeartbeatFile's mtime is the heartbeat ("" = none); HeartbeatAt is the latest posted.
	HeartbeatFile     string
	HeartbeatAt       time.Time
	HeartbeatProgress string
	// HeartbeatFileKnown: HeartbeatFileAt is the file's mtime (zero: no such
	// file), read with Owner's rights since its last change (the daemon's
	// inotify watch), so the file is not stat'ed again.
	HeartbeatFileKnown bool
	HeartbeatFileAt    time.Time
	// NoHeartbeat says the entity has no heartbeat at all, so its staleness
	// is not judged (an ad-hoc probe of a bare pid).
	NoHeartbeat bool
	// HeartbeatRequired makes a sourceless entity age from its start; otherwise
	// it is judged on liveness alone.
	HeartbeatRequired bool

	// StartedAt is when the entity started; zero falls back to StartTime.
	StartedAt time.Time
	// Terminal: the entity has ended, EndedAt when (zero = unknown).
	Terminal bool
	EndedAt  time.Time
	// EndedByDeath, Waiting and StateSince are as in Observations.
	EndedByDeath bool
	Waiting      bool
	StateSince   time.Time
	// ParentTerminal: the parent entity has ended.
	ParentTerminal bool

	// ArtifactsRoot and Artifacts are the artifact contract.
	ArtifactsRoot string
	Artifacts     []state.ArtifactSpec
	// SkipArtifacts leaves a contract's delivery unknown without touching the file system.
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
	return (t.HeartbeatFile != "" && !t.HeartbeatFileKnown) || (t.Terminal && len(t.LockFiles) > 0) || (len(t.Artifacts) > 0 && !t.SkipArtifacts)
}

// Unread is what Probe would return for t when it has nothing to read; ok
// is false when t needs a look.
func Unread(t Subject, now time.Time) (o Observations, ok bool) {
	if !t.Died || t.PID <= 0 || t.readsFiles() {
		return Observations{}, false
	}
	return (&Host{}).Probe(context.Background(), t, now), true
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
			obs.Heartbeat = t.checkHeartbeat(from, now)
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

// Probe runs every check the Subject calls for and returns what it saw. It
// is the sweep's hot path; ctx bounds only the artifact check.
func (h *Host) Probe(ctx context.Context, t Subject, now time.Time) Observations {
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
		CheckedAt:      now,
	}
	obs.PID = h.checkPID(PIDSubject{PID: t.PID, StartTime: t.StartTime, StartTicks: t.StartTicks, HostID: t.HostID, BootID: t.BootID, Exit: t.Exit, Died: t.Died, Watched: t.Watched}, t.Gone, sc)
	if !t.Terminal {
		if t.SupervisorPID > 0 && obs.PID.Liveness == Alive {
			obs.Supervisor = h.checkPID(PIDSubject{PID: t.SupervisorPID, StartTime: t.SupervisorStartTime, HostID: t.HostID, BootID: t.BootID}, false, sc)
		}
	}
	// The files as their owner may see them, in one switch of identity; the
	// copies keep the common path free of allocations.
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
	return obs
}
