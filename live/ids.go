package live

import (
	"unsafe"

	"watchdog/store"
)

// Entity ids, packed (ADR-0052): the view keeps one copy of each id it
// holds, a new one copied into small chunks laid end to end, so the ids do
// not pin the spans of every burst's garbage. A chunk is freed only when
// none of its ids is referenced, hence small chunks.

// idChunk is the size of a chunk of ids; idMax the longest id packed.
const (
	idChunk = 512
	idMax   = 64
)

// idArena lays ids end to end; only the feed's apply uses it.
type idArena struct{ buf []byte }

func (a *idArena) clone(s string) string {
	if s == "" || len(s) > idMax {
		return s
	}
	if cap(a.buf)-len(a.buf) < len(s) {
		a.buf = make([]byte, 0, idChunk)
	}
	start := len(a.buf)
	a.buf = append(a.buf, s...)
	// Never written again below start+len(s): the string's bytes stay.
	return unsafe.String(&a.buf[start], len(s))
}

// holdID makes id the one copy of its entity's id that n, its items and e
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
