package live

import (
	"context"
	"time"

	"watchdog/store"
)

// Get returns an entity's entry, its state stamped evaluated at now.
func (v *View) Get(typ, id string, now time.Time) (Entry, bool) {
	v.mu.RLock()
	r := v.entries.Get(typ, id)
	v.mu.RUnlock()
	if r == nil {
		return Entry{}, false
	}
	// Records are never changed in place: rebuilt after the lock as it was.
	return r.entry(now), true
}

// Entity is the entity typ/id as the view holds it, without its derived
// state, at the cost of a copy.
func (v *View) Entity(typ, id string) (store.Entity, bool) {
	v.mu.RLock()
	r := v.entries.Get(typ, id)
	v.mu.RUnlock()
	if r == nil {
		return store.Entity{}, false
	}
	return r.entity(), true
}

// Each calls fn for every entry (in no order, typ "" for every type) under
// the read lock: fn must be quick and not call the view. The entry is
// reused by the next call: fn must not keep a pointer into it.
func (v *View) Each(typ string, fn func(*Entry)) {
	now := v.now()
	var e Entry
	v.mu.RLock()
	defer v.mu.RUnlock()
	for r := range v.entries.All() {
		if typ == "" || r.typ() == typ {
			e = r.entry(now)
			fn(&e)
		}
	}
}

// Len is how many entities the view holds.
func (v *View) Len() int {
	v.mu.RLock()
	defer v.mu.RUnlock()
	return v.entries.Len()
}

// For is what answers a read of host's entities (all: every host's),
// synced first: the view itself when Complete, else a throwaway view of
// those hosts read from the store now (ADR-0056, ADR-0060). Either way a
// write acknowledged before the read, by any daemon, is in the answer.
func (v *View) For(ctx context.Context, host string, all bool) (*View, error) {
	return v.forRead(ctx, host, all, v.Complete)
}

// forRead is For, answering from the view when holds says so.
func (v *View) forRead(ctx context.Context, host string, all bool, holds func(string, bool) bool) (*View, error) {
	if err := v.Sync(ctx); err != nil {
		return nil, err
	}
	if holds(host, all) {
		return v, nil
	}
	sel := store.Only(host)
	if all {
		sel = store.AllHosts()
	}
	o := New(v.src, v.now, v.FailureWindow())
	o.hosts = func() store.Hosts { return sel }
	if err := o.Load(ctx); err != nil {
		return nil, err
	}
	return o, nil
}
