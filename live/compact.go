package live

import (
	"slices"
	"unsafe"

	"watchdog/attention"
)

// Repacking the records once quiet (ADR-0061): Go's collector never moves
// an object, so the view copies its records into slabs itself. Records are
// immutable, so a reader's old copy stays valid.

// slabRecords is how many records fit the runtime's 8 KB size class, so a
// slab is one object on one page.
const slabRecords = 8192 / int(unsafe.Sizeof(record{}))

// When a compaction is worth its copy: waste is at least an eighth of the
// records held, and at least compactLeast (a small view's holes are not).
const (
	compactShare = 8
	compactLeast = 1024
)

// compactChunk is how many records a compaction moves per hold of the
// lock, bounding a reader's wait. A var for tests.
var compactChunk = 4096

// Compact repacks the view's records into slabs when it is worth it and
// returns how many it moved. It takes the lock a chunk at a time.
func (v *View) Compact() int { return v.compact(compactLeast) }

// letGo counts a record the view no longer holds (under mu).
func (v *View) letGo(r *record) {
	if r.packed {
		v.dead++
	} else {
		v.loose--
	}
}

// compact is Compact with least for compactLeast.
func (v *View) compact(least int) int {
	v.mu.Lock()
	n := v.entries.Len()
	waste := v.loose + v.dead
	if n == 0 || waste < least || waste*compactShare < n {
		v.mu.Unlock()
		return 0
	}
	// Every record moves, packed ones too: the new slabs replace all the old.
	v.dead = 0
	old := make([]*record, 0, n)
	for r := range v.entries.All() {
		old = append(old, r)
	}
	v.mu.Unlock()
	step := max(compactChunk, 1)
	movedAll := 0
	var slab []record
	for from := 0; from < len(old); from += step {
		chunk := old[from:min(from+step, len(old))]
		v.mu.Lock()
		for i, r := range chunk {
			chunk[i] = nil // the original is garbage once moved
			if v.entries.Get(r.typ(), r.id) != r {
				continue // changed or dropped since: counted by apply
			}
			if len(slab) == cap(slab) {
				slab = make([]record, 0, min(slabRecords, len(old)-from-i))
			}
			slab = append(slab, *r)
			c := &slab[len(slab)-1]
			c.packed = true
			if !r.packed {
				v.loose--
			}
			v.entries.Put(c.typ(), c.id, c)
			v.idx.repoint(r, c)
			movedAll++
		}
		v.mu.Unlock()
	}
	return movedAll
}

// repoint points the index's refs to r at its copy c, found by search as
// change found them, so a chunk costs its own records, not the index.
func (x *index) repoint(r, c *record) {
	if r.legacy() {
		return // never indexed
	}
	for i := range r.items {
		it := &r.items[i]
		probe := itemRef{key: attention.KeyOf(it), e: r}
		at, _ := slices.BinarySearchFunc(x.queue, probe, compareRefs)
		for ; at < len(x.queue) && compareRefs(x.queue[at], probe) == 0; at++ {
			if x.queue[at].e == r {
				x.queue[at].e = c
			}
		}
		repointIn(x.byFP, it.Fingerprint, r, c)
		for _, fp := range it.SubsumedFingerprints() {
			repointIn(x.bySubsumed, fp, r, c)
		}
	}
	if r.expires() {
		swapIn(x.ended, r, c)
		if r.coded() {
			swapIn(x.endedCoded, r, c)
		}
	}
}

func repointIn(m map[string]itemRef, fp string, r, c *record) {
	if cur, ok := m[fp]; ok && cur.e == r {
		cur.e = c
		m[fp] = cur
	}
}

// swapIn puts c in r's place in list, sorted by compareArrivals.
func swapIn(list []*record, r, c *record) {
	at, _ := slices.BinarySearchFunc(list, r, compareArrivals)
	for ; at < len(list) && compareArrivals(list[at], r) == 0; at++ {
		if list[at] == r {
			list[at] = c
		}
	}
}
