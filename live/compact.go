package live

import "unsafe"

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
// A slab stays alive while any record in it does, so changes after a
// compaction leave dead slots in slabs: bounded by the changes since the
// last compaction, which the next one (once they are an eighth of the
// view: compactShare) repacks.

// slabRecords is how many records a slab holds: as many as fill the
// runtime's 8 KB size class (34 of 240 bytes, 32 bytes spare), so a slab
// is one object on one page.
const slabRecords = 8192 / int(unsafe.Sizeof(record{}))

// compactShare and compactLeast say when a compaction is worth its copy:
// the records made since the last one (v.loose) are at least an eighth
// of those held, and at least compactLeast (a small view's holes are not
// worth a collection's time).
const (
	compactShare = 8
	compactLeast = 1024
)

// compactChunk is how many records a compaction moves per hold of the
// view's lock: about a millisecond, so a read waits no longer than that
// (all of 100,000 at once held it 30 ms). A var for tests, which move a
// few at a time to interleave chunks with changes.
var compactChunk = 4096

// Compact repacks the view's records into slabs when enough of them were
// made since the last compaction (compactShare, compactLeast), and says
// how many it moved (0: not worth it). It takes the view's lock a chunk
// at a time (compactChunk).
func (v *View) Compact() int { return v.compact(compactLeast) }

// compact is Compact with least for compactLeast (tests repack small
// views).
func (v *View) compact(least int) int {
	v.mu.Lock()
	n := v.entries.Len()
	if n == 0 || v.loose < least || v.loose*compactShare < n {
		v.mu.Unlock()
		return 0
	}
	v.loose = 0
	old := make([]*record, 0, n)
	for r := range v.entries.All() {
		old = append(old, r)
	}
	v.mu.Unlock()
	movedAll := 0
	var slab []record
	for len(old) > 0 {
		chunk := old[:min(compactChunk, len(old))]
		old = old[len(chunk):]
		moved := make(map[*record]*record, len(chunk))
		v.mu.Lock()
		for i, r := range chunk {
			if v.entries.Get(r.typ(), r.id) != r {
				continue // changed or dropped since: its new record is loose
			}
			if len(slab) == cap(slab) {
				slab = make([]record, 0, min(slabRecords, len(chunk)-i+len(old)))
			}
			slab = append(slab, *r)
			c := &slab[len(slab)-1]
			moved[r] = c
			v.entries.Put(c.typ(), c.id, c)
		}
		v.idx.repoint(moved)
		v.mu.Unlock()
		movedAll += len(moved)
	}
	return movedAll
}

// repoint points every ref of the index at the record moved says its
// record was moved to (Compact), keeping those it does not name.
func (x *index) repoint(moved map[*record]*record) {
	if len(moved) == 0 {
		return
	}
	to := func(r *record) *record {
		if c, ok := moved[r]; ok {
			return c
		}
		return r
	}
	for i := range x.queue {
		x.queue[i].e = to(x.queue[i].e)
	}
	for _, m := range [...]map[string]itemRef{x.byFP, x.bySubsumed} {
		for k, r := range m {
			if c, ok := moved[r.e]; ok {
				r.e = c
				m[k] = r
			}
		}
	}
	for _, list := range [...][]*record{x.ended, x.endedCoded} {
		for i := range list {
			list[i] = to(list[i])
		}
	}
}
