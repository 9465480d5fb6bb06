package api

import (
	"time"

	"watchdog/live"
	"watchdog/wire"
)

// selectListed is the list's selection from a synced live view, keyed in order o.
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
