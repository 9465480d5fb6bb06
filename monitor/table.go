package monitor

// table is the monitor's tracked entities by key. It is keyed by the id
// alone, the entity's own string (the view's), so a key costs neither a
// string of the monitor's own ("type/id": 16 to 48 bytes an entity) nor
// a wider map slot: a map keyed by the pair of strings was measured at
// 79 bytes an entity at 10,000 against 60 for the key string and its
// map and 44 for this one. Ids are unique within a type only: an entity
// whose id another type's entity holds already (rare) goes to others.
type table struct {
	byID map[string]*tracked
	// others holds an entity whose id is held in byID by another type's;
	// nil until one is.
	others map[key]*tracked
}

func newTable() table { return table{byID: map[string]*tracked{}} }

// get is the entity of k, nil for none.
func (t *table) get(k key) *tracked {
	if tr := t.byID[k.id]; tr != nil && tr.f.typ == k.typ {
		return tr
	}
	if t.others == nil {
		return nil
	}
	return t.others[k]
}

// put keeps tr under k, the key of its own strings: a new entity, or
// one handed in again in strings of its own (the view's next record),
// which the map's key is set to (a map keeps the key it was first given
// unless assigned again), so no older copy of the id stays beside the
// view's.
func (t *table) put(k key, tr *tracked) {
	cur := t.byID[k.id]
	switch {
	case cur == tr:
		t.byID[k.id] = tr
		return
	case t.others[k] == tr && tr != nil:
		t.others[k] = tr // kept there, though byID's may be free now
		return
	case cur == nil:
		t.byID[k.id] = tr
		return
	}
	if t.others == nil {
		t.others = map[key]*tracked{}
	}
	t.others[k] = tr
}

// del drops tr, kept under k.
func (t *table) del(k key, tr *tracked) {
	if t.byID[k.id] == tr {
		delete(t.byID, k.id)
		return
	}
	delete(t.others, k)
	if len(t.others) == 0 {
		t.others = nil
	}
}

// len is how many entities are kept.
func (t *table) len() int { return len(t.byID) + len(t.others) }

// all is every kept entity, for a range loop (which may drop the one it
// is at).
func (t *table) all() func(yield func(*tracked) bool) {
	return func(yield func(*tracked) bool) {
		for _, tr := range t.byID {
			if !yield(tr) {
				return
			}
		}
		for _, tr := range t.others {
			if !yield(tr) {
				return
			}
		}
	}
}
