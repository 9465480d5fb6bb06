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
// rest back. So the view keeps one copy of each id: the record's own
// while the entity stays (the next version takes it over), and a new
// entity's copied into a chunk of ids laid end to end (idChunk bytes,
// about a thousand ids).
//
// A chunk is one page of its own (8 KB, the runtime's size class for it):
// smaller chunks (512 bytes were tried) share their spans with the
// burst's other garbage of their size, as the blocks did. A chunk is
// freed when no id in it is referenced any more; an id that stays keeps
// its chunk, 8 KB at most, as a live block kept its span before.

// idChunk is the size of a chunk of ids; idMax the longest id packed
// (a longer one is copied on its own: it shares no small block).
const (
	idChunk = 8192
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

// canonIDs gives each entity of a batch the one copy of its id the view
// keeps: the record's when the view holds the entity, else a new one
// packed in the arena. Before interning: the reasons about their own
// entity take that very string.
func (v *View) canonIDs(es []store.Entity) {
	v.mu.RLock()
	defer v.mu.RUnlock()
	for i := range es {
		e := &es[i]
		if old := v.entries.Get(e.Type, e.ID); old != nil {
			e.ID = old.id
		} else {
			e.ID = v.ids.clone(e.ID)
		}
	}
}
