package entmap

import (
	"slices"
	"testing"
	"unsafe"
)

type ent struct{ typ, id string }

// TestSharedIDs: entities of two types with one id are kept, found,
// replaced, handed in again and dropped each on its own, in whichever
// order, and every one is listed once.
func TestSharedIDs(t *testing.T) {
	a, b, c := ent{"session", "x"}, ent{"job", "x"}, ent{"session", "y"}
	for _, order := range [][]ent{{a, b, c}, {b, a, c}} {
		m := New(func(e *ent) string { return e.typ })
		held := map[ent]*ent{}
		put := func(k ent) {
			e := k // a new value each time: Put replaces
			held[k] = &e
			m.Put(k.typ, k.id, &e)
		}
		for _, k := range order {
			put(k)
		}
		check := func(when string, want ...ent) {
			t.Helper()
			if m.Len() != len(want) {
				t.Errorf("%v, %s: %d held, want %d", order, when, m.Len(), len(want))
			}
			var got []*ent
			for e := range m.All() {
				got = append(got, e)
			}
			for _, k := range []ent{a, b, c, {"workflow", "x"}} {
				in := slices.Contains(want, k)
				if found := m.Get(k.typ, k.id); (found != nil) != in || (in && found != held[k]) {
					t.Errorf("%v, %s: Get(%v) = %v, want held %v", order, when, k, found, in)
				}
				n := 0
				for _, e := range got {
					if in && e == held[k] {
						n++
					}
				}
				if want := map[bool]int{true: 1}[in]; n != want {
					t.Errorf("%v, %s: %v listed %d times, want %d", order, when, k, n, want)
				}
			}
		}
		check("all put", a, b, c)
		put(order[1]) // replaced by a new value
		m.Delete(order[0].typ, order[0].id)
		check("the first dropped, the second replaced", order[1], c)
		put(order[1]) // byID's place is free now: still one place
		check("the second replaced again", order[1], c)
		m.Delete(order[1].typ, order[1].id)
		m.Delete(c.typ, c.id)
		m.Delete("workflow", "x") // never held
		check("all dropped")
		if m.others != nil {
			t.Errorf("%v: others kept empty", order)
		}
	}
}

// TestPutTakesTheNewestKey: an entity put again under a new copy of its
// id is keyed by that copy, so the map keeps no older one alive.
func TestPutTakesTheNewestKey(t *testing.T) {
	m := New(func(e *ent) string { return e.typ })
	first, next := string([]byte("x1")), string([]byte("x1"))
	m.Put("session", first, &ent{"session", first})
	m.Put("session", next, &ent{"session", next})
	for k := range m.byID {
		if unsafe.StringData(k) != unsafe.StringData(next) {
			t.Error("the map kept the first copy of the id as its key")
		}
	}
}
