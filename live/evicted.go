package live

import (
	"context"
	"hash/maphash"
	"sort"
	"time"

	"watchdog/attention"
	"watchdog/internal/deadline"
	"watchdog/store"
)

// What a view that drops aged-out entities keeps (ADR-0060).
//
// An entity that ended (terminal, with an outcome that does not linger)
// longer than the failure window ago counts in no queue, no window count
// and no reason gauge: only in the totals by group (watchdog_entities,
// watchdog_entity_states, Counts' Entities), and in the reads that list
// every entity (the list, one entity's read, the page's table), which
// then read the store by index (ListPage, as a fleet's reads of other
// hosts do: ADR-0058). So the view keeps of it only what the totals need
// to stay exact when it changes again: the group it counts in, under a
// 64-bit hash of its key (gone): 43 bytes per entity measured, where a
// failed session's record was 2.1 KB (TestAgedOutMemory).

// gone is what the view keeps of the entities it dropped: each one's
// group, by a hash of its key, and how many per host (Complete). Under
// the view's mu.
type gone struct {
	seed maphash.Seed
	// keys is the group number of each dropped entity by hashKey. Two
	// keys of one view that hash alike (2^-64 a pair) would share an
	// entry: a change to one would move the other's count.
	keys map[uint64]uint32
	// groups numbers the groups (few), so an entry is 12 bytes.
	groups map[Group]uint32
	list   []Group
	hosts  map[string]int
}

func (g *gone) hashKey(k key) uint64 {
	var h maphash.Hash
	h.SetSeed(g.seed)
	h.WriteString(k.typ)
	h.WriteByte(0)
	h.WriteString(k.id)
	return h.Sum64()
}

func (g *gone) len() int { return len(g.keys) }

// has says whether an entity of host was dropped.
func (g *gone) has(host string) bool { return g.hosts[host] > 0 }

// holds says whether k was dropped.
func (g *gone) holds(k key) bool {
	if len(g.keys) == 0 {
		return false
	}
	_, ok := g.keys[g.hashKey(k)]
	return ok
}

// put records k, dropped, counted in grp.
func (g *gone) put(k key, grp Group) {
	if g.keys == nil {
		g.keys, g.groups, g.hosts = map[uint64]uint32{}, map[Group]uint32{}, map[string]int{}
	}
	n, ok := g.groups[grp]
	if !ok {
		n = uint32(len(g.list))
		g.groups[grp] = n
		g.list = append(g.list, grp)
	}
	h := g.hashKey(k)
	if old, ok := g.keys[h]; ok {
		g.hosts[g.list[old].Host]--
	}
	g.keys[h] = n
	g.hosts[grp.Host]++
}

// take forgets k, if it was dropped, and says what group it counted in.
func (g *gone) take(k key) (Group, bool) {
	if len(g.keys) == 0 {
		return Group{}, false
	}
	h := g.hashKey(k)
	n, ok := g.keys[h]
	if !ok {
		return Group{}, false
	}
	delete(g.keys, h)
	grp := g.list[n]
	if g.hosts[grp.Host]--; g.hosts[grp.Host] == 0 {
		delete(g.hosts, grp.Host)
	}
	return grp, true
}

// dropHosts forgets the entities of the hosts sel leaves out (a selection
// that moved), calling ungroup with each one's group.
func (g *gone) dropHosts(sel store.Hosts, ungroup func(Group)) {
	for h, n := range g.keys {
		grp := g.list[n]
		if sel.Has(grp.Host) {
			continue
		}
		delete(g.keys, h)
		if g.hosts[grp.Host]--; g.hosts[grp.Host] == 0 {
			delete(g.hosts, grp.Host)
		}
		ungroup(grp)
	}
}

// ungroup takes one entity out of g's count; v.mu is held.
func (v *View) ungroup(g Group) {
	if v.groups[g]--; v.groups[g] <= 0 {
		delete(v.groups, g)
	}
}

// evictable says whether the view drops r at cut (the failure window's
// start): it ended (terminal: nothing watches or judges it any more, and
// its outcome is final) with an outcome that does not linger, before cut.
func (r *record) evictable(cut time.Time) bool {
	return r.terminal && r.agedOut(cut)
}

// EvictAgedOut makes the view drop the entities that age out of the
// failure window, at once and then each at its age-out, by one alarm on
// the process's clock at the earliest (ADR-0055), never by a periodic
// scan (ADR-0060). What it drops is still read: Complete says the view
// no longer holds every entity, and the reads that list them read the
// store. The daemon's view does this; a view made for one read does not.
func (v *View) EvictAgedOut() {
	v.mu.Lock()
	if v.evict {
		v.mu.Unlock()
		return
	}
	v.evict = true
	v.ageOut = deadline.Shared().Func(v.ageOutFired)
	v.mu.Unlock()
	v.dropAgedOut()
	v.armAgeOut(time.Time{})
}

// ageOutFired is the age-out alarm: drop what aged out, arm the next.
// When it drops nothing (a view whose now is not the process's clock),
// the next try is a second away at the soonest, never a busy loop.
func (v *View) ageOutFired() {
	var soonest time.Time
	if v.dropAgedOut() == 0 {
		soonest = time.Now().Add(time.Second)
	}
	v.armAgeOut(soonest)
}

// dropAgedOut drops every entity that aged out at the view's now and says
// how many. The counts by group keep them (gone).
func (v *View) dropAgedOut() int {
	v.mu.Lock()
	defer v.mu.Unlock()
	if !v.evict {
		return 0
	}
	cut := attention.Since(v.now(), v.window)
	var drop []*record
	// idx.ended is ordered by arrival: the aged-out ones are a prefix.
	for _, r := range v.idx.ended {
		if !r.arrival().Before(cut) {
			break
		}
		if r.evictable(cut) {
			drop = append(drop, r)
		}
	}
	if len(drop) == 0 {
		return 0
	}
	var ed edit
	for _, r := range drop {
		k := key{r.typ(), r.id}
		v.entries.Delete(k.typ, k.id)
		v.letGo(r)
		v.idx.change(r, -1, &ed)
		v.gone.put(k, groupOf(r))
	}
	v.idx.commit(&ed)
	return len(drop)
}

// armAgeOut sets the age-out alarm at the earliest age-out of an entity
// the view holds (not before soonest), or stops it when none will. It
// sets the alarm under mu, so an arming computed from an older state
// (the alarm's own goroutine racing a Sync's apply) never overrides a
// newer one; the clock runs its functions outside its own lock, so
// there is no lock-order edge back to mu. The time is rounded up to the
// next step (a minute; a quarter of a shorter window) so that entities
// ending close together age out at one wake, not one each: a drop a
// little late changes no answer, only when the memory goes.
func (v *View) armAgeOut(soonest time.Time) {
	v.mu.Lock()
	defer v.mu.Unlock()
	alarm := v.ageOut
	if alarm == nil {
		return
	}
	cut := attention.Since(v.now(), v.window)
	ended := v.idx.ended
	i := sort.Search(len(ended), func(i int) bool { return !ended[i].arrival().Before(cut) })
	var at time.Time
	for ; i < len(ended); i++ {
		if ended[i].terminal {
			// Just past the window's end: at its very end the entity is
			// still inside it (attention.AgedOut's Before).
			at = ended[i].arrival().Add(v.window + time.Microsecond)
			break
		}
	}
	if !at.IsZero() {
		at = roundUp(at, min(time.Minute, v.window/4))
	}
	switch {
	case at.IsZero():
		alarm.Stop()
	case at.Before(soonest):
		alarm.SetAt(soonest)
	default:
		alarm.SetAt(at)
	}
}

// roundUp is t rounded up to a multiple of step (from the zero time).
func roundUp(t time.Time, step time.Duration) time.Time {
	if step <= 0 {
		return t
	}
	if r := t.Truncate(step); !r.Equal(t) {
		return r.Add(step)
	}
	return t
}

// AgeOutAt says when the age-out alarm fires next, if it is armed: a
// test's and an operator's view of the one timer.
func (v *View) AgeOutAt() (time.Time, bool) {
	v.mu.RLock()
	alarm := v.ageOut
	v.mu.RUnlock()
	if alarm == nil {
		return time.Time{}, false
	}
	return alarm.Pending()
}

// readBack, after a longer failure window, reads back from the store the
// dropped entities it brings inside the window again: the feed's entities
// from the start (only those it dropped; those still aged out
// skipped), without the hooks (no entity changed). A Sync runs it; an
// error leaves it asked for the next.
func (v *View) readBack(ctx context.Context) error {
	v.mu.RLock()
	gen, done := v.refill, v.refilled
	v.mu.RUnlock()
	if gen == done {
		return nil
	}
	if v.started {
		// Entities from the start; audit rows from the view's cursor,
		// and dropped: the feed read after this one brings them.
		c := v.cursor.AuditOnly()
		for {
			b, err := v.changes(ctx, c, store.FeedFilter{Hosts: v.Hosts(), EntitiesOnly: true})
			if err != nil {
				return err
			}
			c = b.Next
			v.mu.RLock()
			cut := attention.Since(v.now(), v.window)
			back := b.Entities[:0]
			for _, e := range b.Entities {
				// Only what the view dropped: a row it never held is
				// new, and the feed read after this one brings it to
				// the hooks as new.
				if !v.gone.holds(key{e.Type, e.ID}) {
					continue
				}
				if e.Terminal && attention.Arrived(e.EndedAt, e.LifecycleAt, e.UpdatedAt).Before(cut) {
					continue
				}
				back = append(back, e)
			}
			v.mu.RUnlock()
			v.apply(store.Batch{Entities: back}, false)
			if !b.More {
				break
			}
		}
	}
	v.mu.Lock()
	// A reload while this ran lengthened the window again: its
	// generation is left for the next Sync.
	v.refilled = gen
	v.mu.Unlock()
	return nil
}
