package api

import (
	"time"

	"context"
	"slices"

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
}

// Lister is the part of the store a list reads.
type Lister interface {
	List(ctx context.Context, f store.Filter) ([]store.Entity, error)
}

// ListEntities reads the entities f selects, in their read shape at now,
// unsorted (the caller pages or sorts). rows, when not nil, gives each
// selected entity its audit rows (`status --json`); lists otherwise omit
// history.
func ListEntities(ctx context.Context, st Lister, f EntityFilter, now time.Time, rows func(store.Entity) ([]store.AuditRow, error)) ([]wire.Entity, error) {
	list, err := st.List(ctx, store.Filter{Type: f.Type})
	if err != nil {
		return nil, err
	}
	items := make([]wire.Entity, 0, len(list))
	for _, e := range list {
		v := wire.FromEntity(e, nil, now)
		if f.Severities != nil && (v.State.Legacy() || !slices.Contains(f.Severities, v.State.Severity)) {
			continue
		}
		if rows != nil {
			r, err := rows(e)
			if err != nil {
				return nil, err
			}
			v = wire.FromEntity(e, r, now)
		}
		items = append(items, v)
	}
	return items, nil
}
