package monitor

import "watchdog/internal/entmap"

// table is the monitor's tracked entities by key, keyed by the id alone,
// the entity's own string (the view's): a key costs neither a string of
// the monitor's own ("type/id": 16 to 48 bytes an entity) nor a wider
// map slot (entmap). A map keyed by the pair of strings was measured at
// 79 bytes an entity at 10,000 against 60 for the key string and its
// map and 44 for this one.
type table struct{ m entmap.Map[tracked] }

func newTable() table {
	return table{entmap.New(func(tr *tracked) string { return tr.f.typ() })}
}

// get is the entity of k, nil for none.
func (t *table) get(k key) *tracked { return t.m.Get(k.typ, k.id) }

// put keeps tr under k, the key of its own strings: a new entity, or one
// handed in again in strings of its own (the view's next record), which
// the map's key is set to, so no older copy of the id stays beside the
// view's.
func (t *table) put(k key, tr *tracked) { t.m.Put(k.typ, k.id, tr) }

// del drops the entity of k.
func (t *table) del(k key) { t.m.Delete(k.typ, k.id) }

// len is how many entities are kept.
func (t *table) len() int { return t.m.Len() }

// all is every kept entity, for a range loop (which may drop the one it
// is at).
func (t *table) all() func(yield func(*tracked) bool) { return t.m.All() }
