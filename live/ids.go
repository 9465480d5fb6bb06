package live

import (
	"unsafe"

	"watchdog/store"
)

// Entity ids, packed (ADR-0052, fifth step). An id is a short string
// ("t42", a UUID), decoded afresh from every row the feed reads; each
// copy was an allocation of its own, most of them under 16 bytes, which
// the runtime packs with whatever else is small and pointer-free in one
// 16-byte block of an 8 KB span. The blocks of the ids the view keeps
// were spread over the spans of every burst of writes, the rest of
// each span the burst's garbage: at 10,000 sessions about 1.3 MB of
// spans held 0.2 MB of live blocks, and no collection could give the
// rest back. So the view keeps one copy of each id it holds: the
// record's own while the entity stays (the next version takes it over),
// and a newly held entity's copied into a chunk of ids laid end to end
// (idChunk bytes). An entity the view does not hold (aged out at its
// arrival) gets none.
//
// A chunk is freed when none of its ids is referenced any more, and the
// room of an id that is gone is not used again: where entities come and
// go, an entity that stays keeps its chunk. So chunks are small (512
// bytes, a few dozen ids): an id that stays keeps at most that, where a
// free slot of the runtime's could be taken again. Kept one in a
// thousand over 4,000,000 ids, the runtime's copies held 512 bytes of
// heap for each id that stayed and these chunks 612; the 8 KB chunks
// first tried held about 8,000. Nor were 8 KB chunks better for a burst
// by the bench (1,626 to 1,652 B an entity against 1,652 and 1,662).

// idChunk is the size of a chunk of ids; idMax the longest id packed
// (a longer one is copied on its own: it shares no small block).
const (
	idChunk = 512
	idMax   = 64
)

// idArena lays ids end to end. Only the feed's apply uses it (one at a
// time, as the interner).
type idArena struct{ buf []byte }

// clone is a copy of s in a chunk (s itself when empty or long).
func (a *idArena) clone(s string) string {
	if s == "" || len(s) > idMax {
		return s
	}
	if cap(a.buf)-len(a.buf) < len(s) {
		a.buf = make([]byte, 0, idChunk)
	}
	start := len(a.buf)
	a.buf = append(a.buf, s...)
	// The chunk is never written again below start+len(s): the string's
	// bytes stay as they are.
	return unsafe.String(&a.buf[start], len(s))
}

// holdID makes id (equal to n's) the one copy of its entity's id that n,
// its items and e (the change the hooks hear, which the monitor keys by)
// hold. n is not yet published: the apply holds the view's lock.
func holdID(n *record, e *store.Entity, id string) {
	n.id, e.ID = id, id
	for i := range n.items {
		n.items[i].Entity.ID = id
	}
	if r := n.body.rare; r != nil && r.whole != nil {
		r.whole.ID = id
	}
}
