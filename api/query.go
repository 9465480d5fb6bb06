package api

import (
	"context"
	"slices"
	"time"

	"watchdog/live"
	"watchdog/state"
	"watchdog/store"
	"watchdog/wire"
)

// EntityFilter selects the entities of a list: GET /api/v1/entities and
// `watchdog status` read the same one.
type EntityFilter struct {
	// Type is a canonical entity type; "" selects every type.
	Type string
	// Severities keeps the entities of these severities; nil keeps all.
	// Legacy entities have no severity of their own: any filter leaves
	// them out.
	Severities []state.Severity
	// Host keeps the entities recorded on that host (`?host=`); "" keeps
	// every host's and the host-less ones.
	Host string
}

// Lister is the part of the store a list reads.
type Lister interface {
	List(ctx context.Context, f store.Filter) ([]store.Entity, error)
}

// ListEntities reads the entities f selects from a store, in their read
// shape at now, unsorted (the caller pages or sorts): `watchdog status`
// with --db, where no daemon keeps a live view. Each state is derived by
// live.Derive, as the daemon's view derives it. rows, when not nil, gives
// each selected entity its audit rows (`status --json`); lists otherwise
// omit history. hb finds the heartbeat each shows (wire.Heartbeats; nil:
// the posted one).
func ListEntities(ctx context.Context, st Lister, f EntityFilter, now time.Time, rows func(store.Entity) ([]store.AuditRow, error), hb *wire.Heartbeats) ([]wire.Entity, error) {
	list, err := st.List(ctx, store.Filter{Type: f.Type, HostID: f.Host})
	if err != nil {
		return nil, err
	}
	items := make([]wire.Entity, 0, len(list))
	for _, e := range list {
		ns := live.Derive(e, now).State
		if !f.keeps(ns) {
			continue
		}
		var r []store.AuditRow
		if rows != nil {
			if r, err = rows(e); err != nil {
				return nil, err
			}
		}
		items = append(items, wire.FromDerived(e, ns, r, hb, now))
	}
	return items, nil
}

// keeps reports whether an entity of state ns passes the severity filter.
func (f EntityFilter) keeps(ns state.NormalizedState) bool {
	return f.Severities == nil || (!ns.Legacy() && slices.Contains(f.Severities, ns.Severity))
}

// selectListed is the list's selection from the live view (after a
// Sync), each entity with the state the view derived at its last change,
// stamped evaluated at now.
func selectListed(v LiveReader, f EntityFilter, now time.Time) []listed {
	var out []listed
	v.Each(f.Type, func(e *live.Entry) {
		if !f.keeps(e.State) || (f.Host != "" && e.Entity.HostID != f.Host) {
			return
		}
		ns := e.State
		ns.EvaluatedAt.Time = now
		out = append(out, listed{e: &e.Entity, ns: ns})
	})
	return out
}
