package monitor

import "watchdog/internal/entmap"

// table is the monitor's tracked entities, keyed by the view's id string
// alone (entmap): no key string of its own (ADR-0052).
type table struct{ m entmap.Map[tracked] }

func newTable() table {
	return table{entmap.New(func(tr *tracked) string { return tr.f.typ() })}
}

func (t *table) get(k key) *tracked { return t.m.Get(k.typ, k.id) }

// put keeps tr under k; an id handed in a new string re-keys the map, so no
// older copy of the id stays beside the view's.
func (t *table) put(k key, tr *tracked) { t.m.Put(k.typ, k.id, tr) }

func (t *table) del(k key) { t.m.Delete(k.typ, k.id) }

func (t *table) len() int { return t.m.Len() }

// all is every kept entity; the loop may drop the one it is at.
func (t *table) all() func(yield func(*tracked) bool) { return t.m.All() }
