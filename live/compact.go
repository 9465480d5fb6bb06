package live

import (
	"slices"
	"unsafe"

	"watchdog/attention"
)

// Repacking the records after a burst (ADR-0061). Each change of an
// entity makes a new record and the one it replaces becomes garbage, so
// a burst (a fleet registering: each entity written about twice as its
// monitor first judges it) leaves the view's records scattered over the
// runtime's 240-byte spans with about one free slot beside each: at
// 10,000 entities 2.0 MB of holes beside 2.4 MB of records, which the
// runtime can neither give back (a span with one live record stays) nor
// fill until as many records are made again. Go's collector never moves
// an object, so the view moves them itself, once the daemon is quiet
// (the quiet release, daemon/memlimit.go, calls Compact before its
// collection): it copies every record it holds into slabs (slices of
// slabRecords records, one 8 KB page each) and points its map and index
// at the copies. The old records are then garbage and their spans whole
// pages the release gives back.
//
// A record is immutable once made (a reader may hold one after the lock:
// Ref), so the copy is a new snapshot equal to the old one; a reader's
// old one stays valid and the collector frees it when the reader is done.
// A slab stays alive while any record in it does, so the records let go
// after a compaction (changed, dropped) leave dead slots in slabs; the
// view counts them (dead) beside the records it holds outside slabs
// (loose), and repacks again once together they are an eighth of the
// view (compactShare): one entity changed over and over counts once.
// Under a steady stream of changes to many entities it repacks at most
// once per quiet release (5 s without a collection), a copy of about
// 1.5 ms at 10,000 entities beside the writes that made them loose.

// slabRecords is how many records a slab holds: as many as fit the
// runtime's 8 KB size class (35 of 232 bytes, 72 bytes spare), so a slab
// is one object on one page.
const slabRecords = 8192 / int(unsafe.Sizeof(record{}))

// When a compaction is worth its copy: the loose records and dead slots
// are at least an eighth of the records held (compactShare) and at least
// compactLeast (a small view's holes are not worth a collection's time).
const (
	compactShare = 8
	compactLeast = 1024
)

// compactChunk is how many records a compaction moves per hold of the
// view's lock: about a millisecond, so a read waits no longer than that
// (all of 100,000 at once held it 30 ms). A var for tests, which move a
// few at a time to interleave chunks with changes.
var compactChunk = 4096

// Compact repacks the view's records into slabs when it is worth it
// (compactShare, compactLeast) and says how many it moved (0: not worth
// it). It takes the view's lock a chunk at a time (compactChunk).
func (v *View) Compact() int { return v.compact(compactLeast) }

// letGo counts a record the view no longer holds (under mu): a loose one
// less, or a dead slot more.
func (v *View) letGo(r *record) {
	if r.packed {
		v.dead++
	} else {
		v.loose--
	}
}

// compact is Compact with least for compactLeast (tests repack small
// views).
func (v *View) compact(least int) int {
	v.mu.Lock()
	n := v.entries.Len()
	waste := v.loose + v.dead
	if n == 0 || waste < least || waste*compactShare < n {
		v.mu.Unlock()
		return 0
	}
	// Every record moves, the packed ones too: the slabs of this
	// compaction replace all of the last one's, dead slots and all.
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

// repoint points the index's refs to r at c, its copy (Compact): each
// found as change found it, by its items' order and fingerprints and its
// place among the ended, so a chunk costs its own records, not the
// index.
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

// repointIn points m's ref under fp at c if it is r's.
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
