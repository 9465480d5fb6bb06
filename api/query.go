package api

import (
	"time"

	"watchdog/live"
	"watchdog/wire"
)

// selectListed is the list's selection from the live view (after a
// Sync), each entity with the state the view derived at its last change,
// stamped evaluated at now, and its key in order o. Each entity is kept as
// a live.Ref: only a page's are rebuilt whole.
func selectListed(v LiveReader, f wire.EntityFilter, o wire.ListOrder, now time.Time) []listed {
	var out []listed
	v.Each(f.Type, func(e *live.Entry) {
		if !f.Keeps(&e.Entity, e.State) {
			return
		}
		ns := e.State
		ns.EvaluatedAt.Time = now
		out = append(out, listed{ref: e.Ref(), key: wire.ListKeyOf(o, ns, e.Entity.UpdatedAt, e.Entity.Type, e.Entity.ID), ns: ns})
	})
	return out
}
