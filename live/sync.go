package live

import (
	"context"
	"fmt"
	"maps"
	"time"

	"watchdog/attention"
	"watchdog/internal/deadline"
	"watchdog/store"
)

// batchSize is how many rows of each kind one feed read carries.
const batchSize = 2000

// DefaultPeriod is Run's default period.
const DefaultPeriod = 100 * time.Millisecond

// QuietPeriod is RunOn's safety net when the store tells its changes: a
// missed event (an inotify queue that overflowed and was not told, a
// file system without events) is caught within it. Events, not this tick,
// are how a change is seen.
const QuietPeriod = time.Minute

// minSyncGap spaces event-driven syncs: under a burst of commits the view
// syncs at most this often (each sync reads every change since the last),
// so a write storm costs the view at most 100 syncs a second, as the
// 100 ms poll cost at rest.
const minSyncGap = 10 * time.Millisecond

// Load reads every entity and the dismissals, and starts the audit rows
// at the feed's head. It is Sync for a view never synced.
func (v *View) Load(ctx context.Context) error { return v.Sync(ctx) }

// Sync brings the view up to the store: when the data version has not
// moved since the last Sync, one query; else the feed's rows since the
// cursor, and the dismissals again.
func (v *View) Sync(ctx context.Context) error {
	v.syncMu.Lock()
	defer v.syncMu.Unlock()
	sel := store.AllHosts()
	if v.hosts != nil {
		sel = v.hosts()
		// Before the version is read: a commit of a host gained after
		// this wakes the view; one before it is read below.
		if w, ok := v.src.(HostWaker); ok {
			w.WakeFor(sel)
		}
	}
	// The version is read before the rows: a commit after this read moves
	// it again, so the next Sync reads what this one may have missed.
	ver, err := v.src.DataVersion(ctx)
	if err != nil {
		return fmt.Errorf("live view: %w", err)
	}
	if !v.started {
		// The first load reads the selection from the start.
		v.mu.Lock()
		v.sel = sel
		v.mu.Unlock()
	} else if !sel.Equal(v.Hosts()) {
		if err := v.reselect(ctx, sel); err != nil {
			return fmt.Errorf("live view: %w", err)
		}
	}
	if err := v.readBack(ctx); err != nil {
		return fmt.Errorf("live view: %w", err)
	}
	if v.synced && ver == v.version {
		return nil
	}
	if !v.started {
		// Audit rows from the head on: the hooks hear what is written
		// from now, never the history. Entities from the start.
		head, err := v.src.FeedHead(ctx)
		if err != nil {
			return fmt.Errorf("live view: %w", err)
		}
		v.cursor, v.started = head.AuditOnly(), true
	}
	var changed []string // "type/id" of each entity applied, for the subscribers
	for {
		b, err := v.changes(ctx, v.cursor, store.FeedFilter{Hosts: v.Hosts()})
		if err != nil {
			return fmt.Errorf("live view: %w", err)
		}
		v.apply(b, true)
		if v.synced {
			// Load's rows are no news: a subscriber reads the view after.
			for i := range b.Entities {
				changed = append(changed, b.Entities[i].Type+"/"+b.Entities[i].ID)
			}
		}
		v.cursor = b.Next
		if !b.More {
			break
		}
	}
	ds, err := v.src.Dismissals(ctx)
	if err != nil {
		return fmt.Errorf("live view: %w", err)
	}
	v.mu.Lock()
	dismissed := v.synced && !maps.Equal(v.dismissals, ds)
	v.dismissals = ds
	v.mu.Unlock()
	v.version, v.synced = ver, true
	// After the view holds the changes: a woken reader reads them.
	v.publish(changed, dismissed)
	return nil
}

// changes reads one batch of the feed: of the selected hosts only when
// the view has a selection.
func (v *View) changes(ctx context.Context, c store.Cursor, f store.FeedFilter) (store.Batch, error) {
	if hs, ok := v.src.(HostSource); ok && v.hosts != nil {
		return hs.ChangesFor(ctx, c, f, batchSize)
	}
	return v.src.ChangesSince(ctx, c, batchSize)
}

// reselect moves the view's selection to sel: it drops the entities of
// the hosts sel leaves out and reads those of the hosts it adds, from the
// start of the feed, entities only (the view follows every audit row
// already). The feed read that follows, from the view's cursor, brings
// anything written since. An error leaves the old selection in place, to
// be moved again at the next Sync (dropping and reading again are
// idempotent).
func (v *View) reselect(ctx context.Context, sel store.Hosts) error {
	old := v.Hosts()
	if drop := old.Minus(sel); !drop.None() {
		var ed edit
		v.mu.Lock()
		for r := range v.entries.All() {
			if sel.Has(r.host()) {
				continue
			}
			v.entries.Delete(r.typ(), r.id)
			v.letGo(r)
			g := groupOf(r)
			if v.groups[g]--; v.groups[g] == 0 {
				delete(v.groups, g)
			}
			v.idx.change(r, -1, &ed)
		}
		v.idx.commit(&ed)
		v.gone.dropHosts(sel, v.ungroup)
		v.mu.Unlock()
	}
	if add := sel.Minus(old); !add.None() {
		var c store.Cursor
		for {
			b, err := v.changes(ctx, c, store.FeedFilter{Hosts: add, EntitiesOnly: true})
			if err != nil {
				return err
			}
			b.Transitions = nil
			// A host gained is no change of its entities: the hooks
			// (the severity log, the push, the monitor of its own
			// host) hear its later changes, not its load.
			v.apply(b, false)
			c = b.Next
			if !b.More {
				break
			}
		}
	}
	v.mu.Lock()
	v.sel = sel
	v.mu.Unlock()
	return nil
}

// apply installs one batch and, with hooks, calls the hooks.
func (v *View) apply(b store.Batch, hooks bool) {
	at := v.now()
	type change struct {
		prev, rec *record
		cur       *store.Entity
	}
	changes := make([]change, 0, len(b.Entities))
	fresh := make([]*record, len(b.Entities))
	v.hookMu.Lock()
	onChange, onTransitions := v.onChange, v.onTransitions
	v.hookMu.Unlock()
	for i := range b.Entities {
		// Deriving outside the lock keeps readers answering during a
		// large Load. Interning needs no lock: one Sync at a time.
		e := &b.Entities[i]
		v.words.entity(e)
		fresh[i] = newRecord(e, at)
	}
	var ed edit
	// The store sends each entity once per batch; should a source repeat
	// one, the index hears only its last version, as the map keeps.
	// replaced holds it (nil when dropped: aged out, EvictAgedOut).
	replaced := map[key]*record{}
	v.mu.Lock()
	cut := attention.Since(at, v.window)
	for i, n := range fresh {
		k := key{n.typ(), n.id}
		old := v.entries.Get(k.typ, k.id)
		_, again := replaced[k]
		if old != nil {
			// The id copy the view holds already (ids.go).
			holdID(n, &b.Entities[i], old.id)
			v.letGo(old)
			v.ungroup(groupOf(old))
			if !again {
				v.idx.change(old, -1, &ed)
			}
		} else if g, ok := v.gone.take(k); ok {
			// It aged out and was dropped: what it counted in goes.
			v.ungroup(g)
		}
		v.groups[groupOf(n)]++
		if v.evict && n.evictable(cut) {
			// Aged out already (a Load of old rows, a late write to an
			// ended entity): counted, never held. A change that leaves it
			// aged out is no change of what the view holds: the hooks
			// hear it only if the view held it before.
			v.entries.Delete(k.typ, k.id)
			v.gone.put(k, groupOf(n))
			replaced[k] = nil
			if old == nil {
				continue
			}
		} else {
			if old == nil {
				// Held from now on: its own copy of the id, packed.
				holdID(n, &b.Entities[i], v.ids.clone(n.id))
			}
			v.entries.Put(k.typ, n.id, n)
			v.loose++
			replaced[k] = n
		}
		changes = append(changes, change{old, n, &b.Entities[i]})
	}
	for _, n := range replaced {
		if n != nil {
			v.idx.change(n, 1, &ed)
		}
	}
	v.idx.commit(&ed)
	evict := v.evict
	v.mu.Unlock()
	if evict {
		v.armAgeOut(time.Time{})
	}

	if !hooks {
		return
	}
	if len(onChange) > 0 {
		for _, c := range changes {
			// The hooks get the entity before as it was: rebuilt from
			// its record (the batch's copy is the entity after).
			var prev *store.Entity
			if c.prev != nil {
				p := c.prev.entity()
				prev = &p
			}
			// The change's own copy: a hook may keep it, and a pointer
			// into the feed's batch would keep the whole batch alive.
			cur := new(store.Entity)
			*cur = *c.cur
			for _, fn := range onChange {
				fn(prev, cur)
			}
		}
	}
	if len(b.Transitions) > 0 {
		for _, fn := range onTransitions {
			fn(b.Transitions)
		}
	}
}

// Run syncs every period (0 means DefaultPeriod) until ctx ends. A failed
// Sync is retried at the next tick; errors, when not nil, hears of it.
func (v *View) Run(ctx context.Context, every time.Duration, errors func(error)) {
	v.RunOn(ctx, nil, every, errors)
}

// RunOn syncs whenever wake receives (the store's Changes: a commit by
// anyone), at most every minSyncGap, and a period after the last sync in
// any case (0 means DefaultPeriod, the poll for a store that tells
// nothing; with wake, QuietPeriod is the safety net). Its one alarm is on
// the process's shared clock (ADR-0055): an idle daemon then wakes for
// no sync but the net's. A failed Sync is retried at the next wake or
// period; errors, when not nil, hears of it.
func (v *View) RunOn(ctx context.Context, wake <-chan struct{}, every time.Duration, errors func(error)) {
	if every <= 0 {
		every = DefaultPeriod
	}
	next := deadline.Shared().Signal()
	defer next.Stop()
	next.Set(every)
	var last time.Time
	for {
		select {
		case <-ctx.Done():
			return
		case <-wake:
			if soon := last.Add(minSyncGap); time.Now().Before(soon) {
				// Too soon after the last: the alarm syncs at the gap's
				// end, for this commit and any more that come by then.
				next.SetAt(soon)
				continue
			}
		case <-next.C:
		case <-v.kick:
		}
		last = time.Now()
		next.Set(every)
		if err := v.Sync(ctx); err != nil && ctx.Err() == nil && errors != nil {
			errors(err)
		}
	}
}
