package transitions

import (
	"time"

	"watchdog/state"
	"watchdog/store"
)

// View computes an entity's NormalizedState: outcome from its type's
// graph, severity and tone derived (never stored), and reasons made of the
// reason of the transition that brought it to its lifecycle plus the
// probe's current findings.
func View(e store.Entity, evaluatedAt time.Time) state.NormalizedState {
	if e.Lifecycle == nil {
		return state.Normalize(state.LifecycleLegacy, "", e.Health, e.Delivery, e.Reasons, evaluatedAt)
	}
	outcome := ""
	if g, err := Lookup(e.Type); err == nil {
		outcome = g.Outcome(*e.Lifecycle)
	}
	reasons := make([]state.StateReason, 0, len(e.Reasons)+1)
	findings := e.Reasons
	if e.TransitionReason != nil {
		reasons = append(reasons, *e.TransitionReason)
		// One cause, one reason: the end's reason stands for the
		// findings it was based on (state.Subsumes).
		findings = state.Unsubsumed(e.TransitionReason.Code, findings)
	}
	reasons = append(reasons, findings...)
	return state.Normalize(*e.Lifecycle, outcome, e.Health, e.Delivery, reasons, evaluatedAt)
}

// Display renders an entity's display chain.
func Display(e store.Entity, ns state.NormalizedState) string {
	return state.DisplayChain(ns, state.ContractSubject(e.Artifacts))
}
