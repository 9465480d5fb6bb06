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

// Dropping aged-out entities, keeping each one's group (ADR-0060).

// gone is what the view keeps of dropped entities: group by key hash, count
// per host. Under the view's mu.
type gone struct {
	seed maphash.Seed
	// keys: two keys hashing alike (2^-64 a pair) would share a count.
	keys map[uint64]uint32
	// groups numbers the groups (few), so an entry stays small.
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

func (g *gone) has(host string) bool { return g.hosts[host] > 0 }

func (g *gone) holds(k key) bool {
	if len(g.keys) == 0 {
		return false
	}
	_, ok := g.keys[g.hashKey(k)]
	return ok
}

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

// take forgets k, if it was dropped, and returns its group.
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

// dropHosts forgets the entities of the hosts sel leaves out.
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

// evictable says whether the view drops r at cut: terminal and aged out.
func (r *record) evictable(cut time.Time) bool {
	return r.terminal && r.agedOut(cut)
}

// EvictAgedOut makes the view drop entities as they age out, by one alarm
// (ADR-0055), never a periodic scan (ADR-0060).
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

// ageOutFired drops what aged out and arms the next alarm, never busy-looping.
func (v *View) ageOutFired() {
	var soonest time.Time
	if v.dropAgedOut() == 0 {
		soonest = time.Now().Add(time.Second)
	}
	v.armAgeOut(soonest)
}

// dropAgedOut drops every entity aged out at the view's now, returning how many.
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

// armAgeOut sets the alarm at the earliest age-out held (not before
// soonest), or stops it. Set under mu, so an older arming never overrides a
// newer one; the clock calls outside its lock, so no lock-order edge back to
// mu. Rounded up to a step so entities ending together age out in one wake.
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
			// Just past the window: at its very end the entity is still inside it.
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

func roundUp(t time.Time, step time.Duration) time.Time {
	if step <= 0 {
		return t
	}
	if r := t.Truncate(step); !r.Equal(t) {
		return r.Add(step)
	}
	return t
}

// AgeOutAt says when the age-out alarm fires next, if it is armed.
func (v *View) AgeOutAt() (time.Time, bool) {
	v.mu.RLock()
	alarm := v.ageOut
	v.mu.RUnlock()
	if alarm == nil {
		return time.Time{}, false
	}
	return alarm.Pending()
}

// readBack reads back the dropped entities a longer window brings inside,
// without the hooks; a Sync runs it, and an error leaves it for the next.
func (v *View) readBack(ctx context.Context) error {
	v.mu.RLock()
	gen, done := v.refill, v.refilled
	v.mu.RUnlock()
	if gen == done {
		return nil
	}
	if v.started {
		// Entities from the start; the audit rows are left to the next feed read.
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
				// Only what the view dropped: a new row is for the next feed read.
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
	// A reload meanwhile lengthened the window again: left for the next Sync.
	v.refilled = gen
	v.mu.Unlock()
	return nil
}
