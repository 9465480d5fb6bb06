package monitor

import (
	"slices"
	"testing"
)

// TestTableSharedIDs: entities of two types with one id are kept, found,
// handed in again and dropped each on its own, in whichever order, and
// every one is listed once.
func TestTableSharedIDs(t *testing.T) {
	a, b, c := key{"session", "x"}, key{"job", "x"}, key{"session", "y"}
	for _, order := range [][]key{{a, b, c}, {b, a, c}} {
		tb := newTable()
		trs := map[key]*tracked{}
		for _, k := range order {
			trs[k] = &tracked{f: facts{typ: k.typ, id: k.id}}
			tb.put(k, trs[k])
		}
		check := func(when string, want ...key) {
			t.Helper()
			if tb.len() != len(want) {
				t.Errorf("%v, %s: %d kept, want %d", order, when, tb.len(), len(want))
			}
			var got []*tracked
			for tr := range tb.all() {
				got = append(got, tr)
			}
			for _, k := range []key{a, b, c, {"workflow", "x"}} {
				in := slices.Contains(want, k)
				if found := tb.get(k); (found != nil) != in || (in && found != trs[k]) {
					t.Errorf("%v, %s: get(%v) = %p, want %v", order, when, k, found, in)
				}
				if n := len(slices.DeleteFunc(slices.Clone(got), func(tr *tracked) bool { return tr != trs[k] || trs[k] == nil })); n != map[bool]int{true: 1}[in] {
					t.Errorf("%v, %s: %v listed %d times", order, when, k, n)
				}
			}
		}
		check("all put", a, b, c)
		// Handed in again, the first one dropped, the second again: still
		// one place each.
		tb.put(order[1], trs[order[1]])
		tb.del(order[0], trs[order[0]])
		check("the first dropped", order[1], c)
		tb.put(order[1], trs[order[1]])
		check("the second handed in again", order[1], c)
		tb.del(order[1], trs[order[1]])
		tb.del(c, trs[c])
		check("all dropped")
		if tb.others != nil {
			t.Errorf("%v: others kept empty", order)
		}
	}
}
