package live

import (
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"watchdog/attention"
	"watchdog/state"
)

// index keeps what queue and gauges would re-derive at every read, so a read
// costs what it answers; the failure window is applied at the read.
type index struct {
	// queue refs every attention item, in the queue's order (attention.Key).
	queue []itemRef
	// byFP finds an item by fingerprint: the dismissals' side of the counts.
	byFP map[string]itemRef
	// bySubsumed finds the item subsuming a finding, by the finding's fingerprint.
	bySubsumed map[string]itemRef
	// ended: entries whose outcome expires, by arrival (endedCoded: with codes).
	ended, endedCoded []*record
	// openReasons and openItems count the entries that never age out.
	openReasons map[ReasonKey]int
	openItems   map[ItemKey]int
	// leftovers counts the processes their leftover findings name.
	leftovers map[LeftoverKey]int
	// reasonIDs interns (code, severity, host), so a read counts in a slice.
	reasonIDs  map[ReasonKey]int
	reasonKeys []ReasonKey
}

// ReasonKey is a reason code held by an entity of a severity on a host.
type ReasonKey struct {
	Code     state.ReasonCode
	Severity state.Severity
	Host     string
}

// ItemKey is the kind of a queue item the gauges count.
type ItemKey struct {
	Severity state.Severity
	Type     string
	Host     string
}

// LeftoverKey is where leftover processes are counted: entity type and host.
type LeftoverKey struct {
	Type string
	Host string
}

func itemKeyOf(e *record, it *attention.Item) ItemKey {
	return ItemKey{Severity: it.Severity, Type: e.typ(), Host: e.host()}
}

// itemRef is one item with what a queue read asks, so the walk stays in refs.
type itemRef struct {
	key      attention.Key
	e        *record
	i        int32
	severity state.Severity
	// ended and arrived: the failure window's rule.
	ended   bool
	arrived time.Time
}

// agedOut is Entry.agedOut for the ref's entry.
func (r *itemRef) agedOut(cut time.Time) bool { return r.ended && r.arrived.Before(cut) }

func (r itemRef) item() *attention.Item { return &r.e.items[r.i] }

func newIndex() index {
	return index{byFP: map[string]itemRef{}, bySubsumed: map[string]itemRef{}, openReasons: map[ReasonKey]int{}, openItems: map[ItemKey]int{}, leftovers: map[LeftoverKey]int{}, reasonIDs: map[ReasonKey]int{}}
}

// compareRefs is the queue's order, then the entity's key: a total order.
func compareRefs(a, b itemRef) int {
	if c := a.key.Compare(b.key); c != 0 {
		return c
	}
	return compareKeys(a.e, b.e)
}

func compareArrivals(a, b *record) int {
	if aa, ba := a.arrivedAt(), b.arrivedAt(); aa != ba {
		if aa < ba {
			return -1
		}
		return 1
	}
	return compareKeys(a, b)
}

func compareKeys(a, b *record) int {
	if c := strings.Compare(a.typ(), b.typ()); c != 0 {
		return c
	}
	return strings.Compare(a.id, b.id)
}

// coded reports whether e holds codes or items.
func (e *record) coded() bool { return len(e.codes) > 0 || len(e.items) > 0 }

// leftovers counts the processes e's leftover finding names; an end's own
// list is for the next look to turn into the finding or drop.
func (e *record) leftovers() int {
	n := 0
	if x := e.body.rare; x != nil && x.wholeReasons {
		for i := range x.reasons {
			r := &x.reasons[i]
			if r.Code != state.RunHealthLeftoverProcesses {
				continue
			}
			for _, ev := range r.Evidence {
				n += leftoversOf(ev.ID)
			}
		}
		return n
	}
	fs := e.body.findings()
	for i := range fs {
		r := &fs[i]
		if r.code() != state.RunHealthLeftoverProcesses {
			continue
		}
		r.eachMore(func(m *evidenceMore) { n += leftoversOf(m.id) })
	}
	return n
}

// leftoversOf is how many processes one evidence line of the finding counts.
func leftoversOf(id string) int {
	if strings.HasPrefix(id, "pid:") {
		return 1
	}
	if rest, ok := strings.CutPrefix(id, "more:"); ok {
		if m, err := strconv.Atoi(rest); err == nil && m > 0 {
			return m
		}
	}
	return 0
}

type edit struct {
	rmQueue, addQueue []itemRef
	rmEnded, addEnded []*record
	rmCoded, addCoded []*record
}

// change takes e out of the index (sign -1) or puts it in (sign 1).
func (x *index) change(e *record, sign int, ed *edit) {
	if e.legacy() {
		return // no items, no codes, never counted
	}
	for i := range e.items {
		it := &e.items[i]
		r := itemRef{key: attention.KeyOf(it), e: e, i: int32(i),
			severity: it.Severity, ended: e.expires(), arrived: e.arrival()}
		if sign > 0 {
			ed.addQueue = append(ed.addQueue, r)
			x.byFP[it.Fingerprint] = r
			for _, fp := range it.SubsumedFingerprints() {
				x.bySubsumed[fp] = r
			}
		} else {
			ed.rmQueue = append(ed.rmQueue, r)
			if cur, ok := x.byFP[it.Fingerprint]; ok && cur.e == e {
				delete(x.byFP, it.Fingerprint)
			}
			for _, fp := range it.SubsumedFingerprints() {
				if cur, ok := x.bySubsumed[fp]; ok && cur.e == e {
					delete(x.bySubsumed, fp)
				}
			}
		}
	}
	if sign > 0 {
		for i := range e.codes {
			if c := &e.codes[i]; c.id < 0 {
				c.id = int32(x.reason(ReasonKey{c.code, state.ReasonSeverity(c.code, e.severity(), e.open()), e.host()}))
			}
		}
	}
	if e.expires() {
		if sign > 0 {
			ed.addEnded = append(ed.addEnded, e)
		} else {
			ed.rmEnded = append(ed.rmEnded, e)
		}
		if e.coded() {
			if sign > 0 {
				ed.addCoded = append(ed.addCoded, e)
			} else {
				ed.rmCoded = append(ed.rmCoded, e)
			}
		}
		return
	}
	for _, c := range e.codes {
		k := ReasonKey{c.code, state.ReasonSeverity(c.code, e.severity(), e.open()), e.host()}
		if x.openReasons[k] += sign; x.openReasons[k] == 0 {
			delete(x.openReasons, k)
		}
	}
	if n := e.leftovers(); n > 0 {
		k := LeftoverKey{e.typ(), e.host()}
		if x.leftovers[k] += sign * n; x.leftovers[k] == 0 {
			delete(x.leftovers, k)
		}
	}
	for i := range e.items {
		k := itemKeyOf(e, &e.items[i])
		if x.openItems[k] += sign; x.openItems[k] == 0 {
			delete(x.openItems, k)
		}
	}
}

func (x *index) commit(ed *edit) {
	x.queue = update(x.queue, ed.rmQueue, ed.addQueue, compareRefs)
	x.ended = update(x.ended, ed.rmEnded, ed.addEnded, compareArrivals)
	x.endedCoded = update(x.endedCoded, ed.rmCoded, ed.addCoded, compareArrivals)
}

func (x *index) reason(k ReasonKey) int {
	n, ok := x.reasonIDs[k]
	if !ok {
		n = len(x.reasonKeys)
		x.reasonIDs[k] = n
		x.reasonKeys = append(x.reasonKeys, k)
	}
	return n
}

// update returns sorted s without removed and with added, in O(len(s) + k
// log k) at most; removed and added are reordered.
func update[T any](s, removed, added []T, compare func(a, b T) int) []T {
	if len(removed)+len(added) <= 16 {
		for _, r := range removed {
			if i, ok := slices.BinarySearchFunc(s, r, compare); ok {
				s = slices.Delete(s, i, i+1)
			}
		}
		for _, a := range added {
			i, _ := slices.BinarySearchFunc(s, a, compare)
			s = slices.Insert(s, i, a)
		}
		return s
	}
	slices.SortFunc(removed, compare)
	slices.SortFunc(added, compare)
	out := make([]T, 0, len(s)-len(removed)+len(added))
	ri, ai := 0, 0
	for _, v := range s {
		for ri < len(removed) && compare(removed[ri], v) < 0 {
			ri++ // not in s
		}
		if ri < len(removed) && compare(removed[ri], v) == 0 {
			ri++
			continue
		}
		for ai < len(added) && compare(added[ai], v) < 0 {
			out = append(out, added[ai])
			ai++
		}
		out = append(out, v)
	}
	return append(out, added[ai:]...)
}

// inWindow is the suffix of list (sorted by arrival) not aged out at now.
func inWindow(list []*record, now time.Time, window time.Duration) []*record {
	cut := attention.Since(now, window)
	i := sort.Search(len(list), func(i int) bool { return !list[i].arrival().Before(cut) })
	return list[i:]
}

// agedOut is Entry.AgedOut with the window's start computed once.
func (e *Entry) agedOut(cut time.Time) bool {
	return e.State.Outcome != "" && !e.lingers && e.arrived.Before(cut)
}

func (e *record) agedOut(cut time.Time) bool {
	return e.expires() && e.arrival().Before(cut)
}

// expires reports whether the failure window applies to e (not lingering).
func (e *record) expires() bool { return e.ended && !e.lingers }
