package judge

import (
	"fmt"
	"slices"
	"time"

	"watchdog/internal/unixtime"
	"watchdog/probe"
	"watchdog/state"
	"watchdog/store"
	"watchdog/transitions"
)

// A dead process with no end in its graph is flagged, not ended: ending it
// would invent an outcome (ADR-0022). The flag follows from the recorded death alone.

// unownedDeath is the flag for e's dead process with no end, past terminal_grace.
func unownedDeath(e store.Entity, res Result, dead time.Time, s Settings, now time.Time) (state.StateReason, bool) {
	// An entity with an outcome has had its end recorded: nothing left to ask.
	if e.Lifecycle == nil || e.Terminal || Finished(&e) || res.Liveness != probe.Dead || dead.IsZero() ||
		DeadTarget(&e) != "" || now.Sub(dead) < s.TerminalGrace {
		return state.StateReason{}, false
	}
	from := *e.Lifecycle
	// The moment comes last: readers append its age ("…, 12m ago").
	msg := fmt.Sprintf("a %s has no end for a dead process: %s; process dead since %s", e.Type, endHint(e, from), state.Stamp(dead))
	f := state.Observed(state.SystemHealthProcessDeadUnowned, msg)
	f.Since = unixtime.Of(dead)
	// The flag takes over the probe's pid evidence: one item for one cause.
	for _, p := range res.Reasons {
		if p.Code == state.RunHealthProcessDead {
			f.Evidence = p.Evidence
		}
	}
	return f, true
}

// flagUnowned replaces the probe's death finding in reasons by the flag f
// (appending it when the probe gave none).
func flagUnowned(reasons []state.StateReason, f state.StateReason) []state.StateReason {
	out := make([]state.StateReason, 0, len(reasons)+1)
	placed := false
	for _, r := range reasons {
		if r.Code == state.RunHealthProcessDead || r.Code == state.SystemHealthProcessDeadUnowned {
			if !placed {
				out = append(out, f)
				placed = true
			}
			continue
		}
		out = append(out, r)
	}
	if !placed {
		out = append(out, f)
	}
	return out
}

// endHint names the command that records an end for e from lifecycle from:
// a failing outcome where the graph has an edge to one, else any outcome.
func endHint(e store.Entity, from string) string {
	g, err := transitions.Lookup(e.Type)
	if err != nil {
		return "record its end"
	}
	targets := g.Targets(from)
	to := ""
	for _, want := range []string{"failed", "aborted", "cancelled", "closed"} {
		if slices.Contains(targets, want) && g.Outcome(want) != "" {
			to = want
			break
		}
	}
	if to == "" {
		for _, t := range targets {
			if g.Outcome(t) != "" {
				to = t
				break
			}
		}
	}
	if to == "" && slices.Contains(targets, "disabled") {
		// A schedule has no end: what stops it is being disabled.
		return fmt.Sprintf("disable it (`watchdog transition %s/%s disabled`) or re-register it with a live pid", e.Type, e.ID)
	}
	if to == "" {
		return fmt.Sprintf("its lifecycle %s has no end to record; re-register it with a live pid or none", from)
	}
	cmd := fmt.Sprintf("watchdog transition %s/%s %s", e.Type, e.ID, to)
	if to == "failed" {
		cmd += " --reason " + string(state.RunFailedOperator)
	}
	return "record one, e.g. `" + cmd + "`"
}

// Flagged returns e's flag when its stored findings carry one.
func Flagged(e *store.Entity) (state.StateReason, bool) {
	for _, r := range e.Reasons {
		if r.Code == state.SystemHealthProcessDeadUnowned {
			return r, true
		}
	}
	return state.StateReason{}, false
}

// Subject is what the probe needs to look at for e. Artifacts are judged
// only once e ended: a running session has not yet written them.
func Subject(e *store.Entity, parentTerminal bool) probe.Subject {
	return probe.Subject{
		PID: e.PID, StartTime: e.PIDStartTime, StartTicks: e.PIDStartTicks, HostID: e.HostID, BootID: e.BootID, Exit: e.Exit,
		SupervisorPID: e.SupervisorPID, SupervisorStartTime: e.SupervisorStartTime,
		HeartbeatFile: e.HeartbeatFile, HeartbeatAt: e.HeartbeatAt, HeartbeatProgress: e.HeartbeatProgress,
		StartedAt: e.StartedAt, Terminal: e.Terminal, EndedAt: e.EndedAt, ParentTerminal: parentTerminal,
		ArtifactsRoot: e.ArtifactsRoot, Artifacts: e.Artifacts, SkipArtifacts: !e.Terminal,
		LockFiles:    e.LockFiles,
		EndedByDeath: EndedByDeath(e), Waiting: transitions.Waiting(*e), StateSince: StateSince(e),
		Owner: OwnerOf(e),
	}
}

// OwnerOf is whose rights e's files are read with: the uid its registration
// proved, else nobody's.
func OwnerOf(e *store.Entity) probe.Owner {
	return probe.Owner{UID: e.OwnerUID, Known: e.HasOwnerUID}
}

// PIDSubject is e's recorded process, as a pid check needs it.
func PIDSubject(e *store.Entity) probe.PIDSubject {
	return probe.PIDSubject{PID: e.PID, StartTime: e.PIDStartTime, StartTicks: e.PIDStartTicks, HostID: e.HostID, BootID: e.BootID, Exit: e.Exit}
}
