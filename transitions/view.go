package transitions

import (
	"slices"
	"time"

	"watchdog/state"
	"watchdog/store"
)

// Normalize computes an entity's NormalizedState: outcome from its graph,
// severity and tone derived (never stored), and reasons: the transition's,
// then the current findings it does not subsume.
func Normalize(e store.Entity, evaluatedAt time.Time) state.NormalizedState {
	if e.Lifecycle == nil {
		return state.Normalize(state.LifecycleLegacy, "", e.Health, e.Delivery, e.Reasons, evaluatedAt)
	}
	outcome := ""
	if g, err := Lookup(e.Type); err == nil {
		outcome = g.Outcome(*e.Lifecycle)
	}
	if e.TransitionReason == nil {
		// Shared with the entity, not copied, and clipped so a reader's append
		// copies.
		return state.Normalize(*e.Lifecycle, outcome, e.Health, e.Delivery, slices.Clip(e.Reasons), evaluatedAt)
	}
	// One cause, one reason (state.Subsumes).
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

// Waiting says e is open but not in a working state of its type: it owes
// no heartbeat, and its last one's age is not judged (Graph.Working).
func Waiting(e store.Entity) bool {
	if e.Terminal || e.Lifecycle == nil {
		return false
	}
	g, err := Lookup(e.Type)
	return err == nil && !g.Working(*e.Lifecycle)
}

// Judged says whether an entity has a runtime of its own whose health is
// judged: a process, a heartbeat file or posted heartbeats.
func Judged(e store.Entity) bool {
	return e.PID > 0 || e.HeartbeatFile != "" || !e.HeartbeatAt.IsZero()
}
