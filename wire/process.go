package wire

import (
	"time"

	"watchdog/state"
	"watchdog/store"
)

// Processes is how a reader finds an entity's process facts (the entity
// read's `process` object, ADR-0048): read from /proc at the read, on
// the process's own host only, never on a timer and never stored.
//
// It is injected, as Heartbeats is, so that wire stays a package of
// shapes: the reader says which host it is and how to read.
type Processes struct {
	// HostID is this host's id: only its entities' processes are read.
	HostID string
	// Read reads the facts of e's process (its pid and recorded
	// identity) and its tree at now.
	Read func(e *store.Entity, now time.Time) state.ProcessFacts
	// Leftovers reads what the processes e's leftover finding names are
	// doing at now (nil: none named); nil reads none.
	Leftovers func(e *store.Entity, now time.Time) *state.LeftoverFacts
}

// LeftoversOf is what e's named leftovers are doing at now, nil when there
// is nothing to read: a nil p, an entity of another host, or no leftover
// finding (open or ended: an ended entity's leftovers are the ones nobody
// is left to stop).
func (p *Processes) LeftoversOf(e *store.Entity, now time.Time) *state.LeftoverFacts {
	if p == nil || p.Leftovers == nil || p.HostID == "" || e.HostID != p.HostID {
		return nil
	}
	return p.Leftovers(e, now)
}

// Of is e's process facts at now, nil when there are none to read: a nil
// p (a reader that cannot see this host's processes), an entity of
// another host, without a pid, legacy, or ended (its type's terminal
// lifecycle; an ended entity's leftovers are its finding's, ADR-0044).
func (p *Processes) Of(e *store.Entity, now time.Time) *state.ProcessFacts {
	if p == nil || p.Read == nil || p.HostID == "" || e.HostID != p.HostID || e.PID <= 0 || !e.Open() {
		return nil
	}
	f := p.Read(e, now)
	return &f
}
