package api

import (
	"time"

	"watchdog/live"
	"watchdog/wire"
)

// selectListed is the list's selection from the live view (after a
// Sync), each entity with the state the view derived at its last change,
// stamped evaluated at now.
func selectListed(v LiveReader, f wire.EntityFilter, now time.Time) []listed {
	var out []listed
	v.Each(f.Type, func(e *live.Entry) {
		if !f.Keeps(&e.Entity, e.State) {
			return
		}
		ns := e.State
		ns.EvaluatedAt.Time = now
		out = append(out, listed{e: &e.Entity, ns: ns})
	})
	return out
}
