package reaper

import (
	"time"

	"watchdog/internal/unixtime"
	"watchdog/judge"
	"watchdog/probe"
	"watchdog/proctree"
	"watchdog/state"
	"watchdog/store"
)

// ReadFacts is how a reader on this host reads an open entity's process
// facts (ADR-0048), the root checked against its recorded identity.
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

// ReadLeftovers is how a reader on this host reads what e's named leftovers
// are doing, each as its own root so its CPU% is its own.
func ReadLeftovers(f *probe.Facts) func(e *store.Entity, now time.Time) *state.LeftoverFacts {
	return func(e *store.Entity, now time.Time) *state.LeftoverFacts {
		refs := judge.Leftovers(e)
		if len(refs) == 0 {
			return nil
		}
		out := &state.LeftoverFacts{ReadAt: unixtime.Of(now), Processes: []state.LeftoverProcess{}}
		for _, ref := range refs {
			pf := f.Read(probe.PIDSubject{PID: ref.PID, StartTicks: ref.StartTicks, BootID: e.BootID}, nil, "leftover", now)
			if pf.ProcessUsage == nil {
				continue // gone, or its pid reused
			}
			out.Running++
			out.CPUPercent += pf.CPUPercent
			out.RSSBytes += pf.RSSBytes
			out.Processes = append(out.Processes, state.LeftoverProcess{PID: ref.PID, CPUPercent: pf.CPUPercent, RSSBytes: pf.RSSBytes})
		}
		return out
	}
}
