package wire

import (
	"slices"

	"watchdog/state"
	"watchdog/store"
)

// EntityFilter selects the entities of every list; empty fields select everything.
type EntityFilter struct {
	// Type is a canonical entity type; "" selects every type.
	Type string
	// Severities keeps these severities (nil: all); legacy entities have none.
	Severities []state.Severity
	// Host keeps that host's entities; "" keeps all, host-less ones too.
	Host string
}

// Keeps reports whether f selects e, whose derived state is ns.
func (f EntityFilter) Keeps(e *store.Entity, ns state.NormalizedState) bool {
	if f.Type != "" && e.Type != f.Type {
		return false
	}
	if f.Host != "" && e.HostID != f.Host {
		return false
	}
	return f.Severities == nil || (!ns.Legacy() && slices.Contains(f.Severities, ns.Severity))
}
