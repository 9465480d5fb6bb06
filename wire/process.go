package wire

import (
	"time"

	"watchdog/state"
	"watchdog/store"
)

// Processes is how a reader finds an entity's process facts: from /proc at
// the read, on its own host, never stored (ADR-0048).
type Processes struct {
	// HostID is this host's id: only its entities' processes are read.
	HostID string
	// Read reads the facts of e's process and its tree at now.
	Read func(e *store.Entity, now time.Time) state.ProcessFacts
	// Leftovers reads what e's named leftover processes are doing; nil reads none.
	Leftovers func(e *store.Entity, now time.Time) *state.LeftoverFacts
}

// LeftoversOf is what e's named leftovers are doing at now, ended or not;
// nil when there is nothing to read.
func (p *Processes) LeftoversOf(e *store.Entity, now time.Time) *state.LeftoverFacts {
	if p == nil || p.Leftovers == nil || p.HostID == "" || e.HostID != p.HostID {
		return nil
	}
	return p.Leftovers(e, now)
}

// Of is e's process facts at now; nil unless an open entity of this host with a pid.
func (p *Processes) Of(e *store.Entity, now time.Time) *state.ProcessFacts {
	if p == nil || p.Read == nil || p.HostID == "" || e.HostID != p.HostID || e.PID <= 0 || !e.Open() {
		return nil
	}
	f := p.Read(e, now)
	return &f
}
