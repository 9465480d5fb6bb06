package reaper

import (
	"time"

	"watchdog/judge"
	"watchdog/probe"
	"watchdog/proctree"
	"watchdog/state"
	"watchdog/store"
)

// ReadFacts is how a reader on this host reads an open entity's process
// facts (ADR-0048; wire.Processes.Read): the root checked against its
// recorded identity, its tree from t when t keeps it (the daemon's), else
// seeded from the root now (a CLI's, t nil), every member read once by f.
func ReadFacts(f *probe.Facts, t *proctree.Tree) func(e *store.Entity, now time.Time) state.ProcessFacts {
	return func(e *store.Entity, now time.Time) state.ProcessFacts {
		ms, mode := proctree.MembersOf(t, proctree.Root{PID: e.PID, StartTicks: e.PIDStartTicks})
		members := make([]probe.TreeMember, len(ms))
		for i, m := range ms {
			members[i] = probe.TreeMember{PID: m.PID, StartTicks: m.StartTicks}
		}
		return f.Read(judge.PIDSubject(e), members, mode, now)
	}
}
