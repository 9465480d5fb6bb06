package page

import (
	"slices"

	"watchdog/live"
	"watchdog/state"
	"watchdog/wire"
)

// row is one selected entity: its key and the view's record, rebuilt only on the page.
type row struct {
	key wire.ListKey
	ref live.Ref
	ns  state.NormalizedState
}

// pageOf keeps the page of at most limit rows after after in one pass (the
// limit+1 smallest keys: a walk, not a sort); before counts rows ahead of it.
type pageOf struct {
	limit  int
	after  *wire.ListKey
	rows   []row // sorted, at most limit+1
	before int
	total  int
}

func (p *pageOf) add(r row) {
	p.total++
	if p.after != nil && !p.after.Less(r.key) {
		p.before++
		return
	}
	n := len(p.rows)
	if n == p.limit+1 && !r.key.Less(p.rows[n-1].key) {
		return
	}
	i, _ := slices.BinarySearchFunc(p.rows, r.key, func(x row, k wire.ListKey) int {
		if x.key.Less(k) {
			return -1
		}
		return 1
	})
	if n == p.limit+1 {
		p.rows = p.rows[:n-1]
	}
	p.rows = slices.Insert(p.rows, i, r)
}

// page is the rows shown and the cursor of the next page ("" when none).
func (p *pageOf) page() ([]row, string) {
	if len(p.rows) > p.limit {
		return p.rows[:p.limit], p.rows[p.limit-1].key.Cursor()
	}
	return p.rows, ""
}
