package live

import (
	"time"

	"watchdog/attention"
	"watchdog/state"
	"watchdog/store"
	"watchdog/transitions"
)

// Derived is what an entity's stored row implies, computed once per
// change. Nothing in it depends on the time of the read except through
// AgedOut, which the reader asks with its own now.
type Derived struct {
	// State is transitions.Normalize's NormalizedState (its EvaluatedAt is the
	// time of the change: a reader stamps its own).
	State state.NormalizedState
	// Display is the display chain.
	Display string
	// Items are the entity's attention items with the failure window and
	// dismissals not applied (attention.ItemsFor).
	Items []attention.Item
	// Codes are the codes of the reasons the entity holds (the
	// transition's, then the findings'), each once: what
	// watchdog_reasons_active counts.
	Codes []state.ReasonCode
}

// Entry is one entity of the view with its derived state, as a read
// gets it: the view keeps a compact record of each entity (record) and
// rebuilds its Entry when asked (Get, Each), so an Entry is the reader's
// own copy.
type Entry struct {
	Entity store.Entity
	Derived
	// arrived is attention.Arrived of the entity, without a monotonic
	// reading, so the failure window's rule is one comparison.
	arrived time.Time
	// lingers is attention.Lingers: an outcome that never ages out while
	// it lasts (an orphan whose process lives), counted like an open
	// entity's items.
	lingers bool
	// rec is the record the entry was rebuilt from (nil for one built
	// elsewhere).
	rec *record
}

// Ref is an entity of the view as one read saw it, a pointer's worth:
// a list keeps a Ref of every entity it selects (Each) and rebuilds only
// those of its page, as they were when selected.
type Ref struct{ r *record }

// Ref is the entity the entry was rebuilt from, as it was then.
func (e *Entry) Ref() Ref { return Ref{e.rec} }

// Entity rebuilds the entity (the zero Entity for a Ref of an Entry the
// view did not make).
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
// surface's severity, tone, display chain and attention items come from,
// in the daemon (once per change) and in the CLI reading a store.
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
		// A finding the end's reason subsumes is the same cause
		// (state.Subsumes): counted once, under the end's code.
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

// EntryOf is the Entry of an entity the view does not hold (another
// host's, read from the store), derived at now as the view derives its
// own.
func EntryOf(e store.Entity, now time.Time) Entry {
	w := newInterner()
	w.entity(&e)
	return newRecord(&e, now).entry(now)
}
