// Package entmap is a map of entities by type and id keyed by the entity's own
// id string alone; an id two types share goes to a second map (ADR-0052).
package entmap

// Map holds *V by type and id. The zero Map is not usable: see New. It is
// not safe for concurrent use.
type Map[V any] struct {
	typeOf func(*V) string
	byID   map[string]*V
	// others holds an entity whose id byID holds for another type; nil if none.
	others map[[2]string]*V
}

// New is an empty Map; typeOf reads an entity's type.
func New[V any](typeOf func(*V) string) Map[V] {
	return Map[V]{typeOf: typeOf, byID: map[string]*V{}}
}

// Get is the entity of typ and id, nil for none.
func (m *Map[V]) Get(typ, id string) *V {
	if v := m.byID[id]; v != nil && m.typeOf(v) == typ {
		return v
	}
	if m.others == nil {
		return nil
	}
	return m.others[[2]string{typ, id}]
}

// Put keeps v (of typ) under id, replacing the one held. The key becomes id
// itself, so a caller handing in the entity's newest strings keeps no older copy.
func (m *Map[V]) Put(typ, id string, v *V) {
	cur := m.byID[id]
	if cur != nil && m.typeOf(cur) == typ {
		m.byID[id] = v
		return
	}
	k := [2]string{typ, id}
	if _, ok := m.others[k]; ok {
		m.others[k] = v // kept there, though byID's may be free now
		return
	}
	if cur == nil {
		m.byID[id] = v
		return
	}
	if m.others == nil {
		m.others = map[[2]string]*V{}
	}
	m.others[k] = v
}

// Delete drops the entity of typ and id, if held.
func (m *Map[V]) Delete(typ, id string) {
	if v := m.byID[id]; v != nil && m.typeOf(v) == typ {
		delete(m.byID, id)
		return
	}
	if m.others == nil {
		return
	}
	delete(m.others, [2]string{typ, id})
	if len(m.others) == 0 {
		m.others = nil
	}
}

// Len is how many entities it holds.
func (m *Map[V]) Len() int { return len(m.byID) + len(m.others) }

// All is every entity held, in no order, for a range loop (which may
// Delete the one it is at, as a map's range may).
func (m *Map[V]) All() func(yield func(*V) bool) {
	return func(yield func(*V) bool) {
		for _, v := range m.byID {
			if !yield(v) {
				return
			}
		}
		for _, v := range m.others {
			if !yield(v) {
				return
			}
		}
	}
}
