package wire

import (
	"slices"

	"watchdog/state"
	"watchdog/store"
)

// EntityFilter selects the entities of a list: the parameters of
// GET /api/v1/entities (?type=, ?severity=, ?host=), which the API applies
// to the live view, the operator's page to its entity table, and
// `watchdog status` to a database it reads (or sends to a daemon). It
// lives beside the list's order (SortEntities) so that every list selects
// and orders by the same rule. Empty fields select everything.
type EntityFilter struct {
	// Type is a canonical entity type; "" selects every type. (A client
	// may send an alias: the API resolves it before selecting.)
	Type string
	// Severities keeps the entities of these severities; nil keeps all.
	// Legacy entities have no severity of their own: any filter leaves
	// them out.
	Severities []state.Severity
	// Host keeps the entities recorded on that host (`?host=`); "" keeps
	// every host's and the host-less ones.
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
