package transitions

import (
	"slices"
	"time"

	"watchdog/state"
	"watchdog/store"
)

// Normalize computes an entity's NormalizedState: outcome from its type's
// graph, severity and tone derived (never stored), and reasons made of the
// reason of the transition that brought it to its lifecycle plus the
// probe's current findings.
func Normalize(e store.Entity, evaluatedAt time.Time) state.NormalizedState {
	if e.Lifecycle == nil {
		return state.Normalize(state.LifecycleLegacy, "", e.Health, e.Delivery, e.Reasons, evaluatedAt)
	}
	outcome := ""
	if g, err := Lookup(e.Type); err == nil {
		outcome = g.Outcome(*e.Lifecycle)
	}
	if e.TransitionReason == nil {
		// The findings alone: shared with the entity, not copied (the
		// live view keeps both for every entity), clipped so that an
		// append by a reader copies.
		return state.Normalize(*e.Lifecycle, outcome, e.Health, e.Delivery, slices.Clip(e.Reasons), evaluatedAt)
	}
	// One cause, one reason: the end's reason stands for the findings it
	// was based on (state.Subsumes).
	findings := state.Unsubsumed(e.TransitionReason.Code, e.Reasons)
	reasons := make([]state.StateReason, 0, len(findings)+1)
	reasons = append(reasons, *e.TransitionReason)
	reasons = append(reasons, findings...)
	return state.Normalize(*e.Lifecycle, outcome, e.Health, e.Delivery, reasons, evaluatedAt)
}

// Display renders an entity's display chain.
func Display(e store.Entity, ns state.NormalizedState) string {
	return state.DisplayChain(ns, state.ContractSubject(e.Artifacts), Judged(e))
}

// Waiting says e is open but not in a working state of its type (an agent
// idle or suspended, a held workflow, a planned play): it owes no
// heartbeat, and the age of its last one is not judged (Graph.Working).
// A legacy or ended entity, or one of an unknown type, is not waiting.
func Waiting(e store.Entity) bool {
	if e.Terminal || e.Lifecycle == nil {
		return false
	}
	g, err := Lookup(e.Type)
	return err == nil && !g.Working(*e.Lifecycle)
}

// Judged says whether an entity has a runtime of its own whose health is
// judged: a process, a heartbeat file or posted heartbeats. Only then does
// its display chain say "Infra OK" (state.DisplayChain).
func Judged(e store.Entity) bool {
	return e.PID > 0 || e.HeartbeatFile != "" || !e.HeartbeatAt.IsZero()
}
