package live

import (
	"time"

	"watchdog/attention"
	"watchdog/state"
	"watchdog/store"
	"watchdog/transitions"
)

// Derived is what an entity's stored row implies, computed once per
// change; only AgedOut depends on the read's time.
type Derived struct {
	// State is transitions.Normalize's, stamped at the change: a reader
	// stamps its own.
	State state.NormalizedState
	// Display is the display chain.
	Display string
	// Items are the attention items, window and dismissals not applied.
	Items []attention.Item
	// Codes are the reason codes the entity holds, each once:
	// watchdog_reasons_active counts them.
	Codes []state.ReasonCode
}

// Entry is one entity of the view with its derived state, rebuilt from
// its record when asked: the reader's own copy.
type Entry struct {
	Entity store.Entity
	Derived
	// arrived is attention.Arrived without a monotonic reading.
	arrived time.Time
	// lingers is attention.Lingers: an outcome that never ages out while it lasts.
	lingers bool
	// rec is the record it was rebuilt from (nil when built elsewhere).
	rec *record
}

// Ref is an entity of the view as one read saw it: a list keeps a Ref of
// every entity it selects and rebuilds only its page.
type Ref struct{ r *record }

// Ref is the entity the entry was rebuilt from, as it was then.
func (e *Entry) Ref() Ref { return Ref{e.rec} }

// Entity rebuilds the entity (zero for a Ref the view did not make).
func (r Ref) Entity() store.Entity {
	if r.r == nil {
		return store.Entity{}
	}
	return r.r.entity()
}

// Legacy reports whether the entity has no lifecycle.
func (e *Entry) Legacy() bool { return e.Entity.Lifecycle == nil }

// Open reports whether the entity is open: not legacy, not terminal.
func (e *Entry) Open() bool { return e.Entity.Open() }

// AgedOut reports whether the entity reached its outcome before the
// failure window that ends at now began (attention.AgedOut).
func (e *Entry) AgedOut(now time.Time, window time.Duration) bool {
	return e.agedOut(attention.Since(now, window))
}

// Current reports whether the entity counts now: open, or with an outcome
// inside the failure window (legacy entities never do).
func (e *Entry) Current(now time.Time, window time.Duration) bool {
	return !e.Legacy() && !e.AgedOut(now, window)
}

// Derive computes an entity's derived state: the one function every
// surface's severity, tone, display chain and items come from.
func Derive(e store.Entity, at time.Time) Derived {
	ns := transitions.Normalize(e, at)
	d := Derived{State: ns, Display: transitions.Display(e, ns), Items: attention.ItemsFor(e, ns)}
	if ns.Legacy() {
		return d
	}
	var transition state.ReasonCode
	if e.TransitionReason != nil && e.TransitionReason.Code != "" {
		transition = e.TransitionReason.Code
		d.Codes = append(d.Codes, transition)
	}
	for _, r := range e.Reasons {
		// A finding the end's reason subsumes is the same cause: counted once.
		if r.Code != "" && !containsCode(d.Codes, r.Code) && !state.Subsumes(transition, r.Code) {
			d.Codes = append(d.Codes, r.Code)
		}
	}
	return d
}

func containsCode(list []state.ReasonCode, c state.ReasonCode) bool {
	for _, v := range list {
		if v == c {
			return true
		}
	}
	return false
}

// EntryOf is the Entry of an entity the view does not hold, derived at now
// as the view derives its own.
func EntryOf(e store.Entity, now time.Time) Entry {
	w := newInterner()
	w.entity(&e)
	return newRecord(&e, now).entry(now)
}
