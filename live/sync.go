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

// QuietPeriod is RunOn's safety net for a missed change event.
const QuietPeriod = time.Minute

// minSyncGap spaces event-driven syncs: a burst costs one sync per gap.
const minSyncGap = 10 * time.Millisecond

// settleGap is when a sync woken by a commit event looks again.
const settleGap = 50 * time.Millisecond

// Load reads every entity and the dismissals, audit rows from the head on.
func (v *View) Load(ctx context.Context) error { return v.Sync(ctx) }

// Sync brings the view up to the store: one query when the data version
// has not moved, else the feed's rows since the cursor and the dismissals.
func (v *View) Sync(ctx context.Context) error {
	v.syncMu.Lock()
	defer v.syncMu.Unlock()
	sel := store.AllHosts()
	if v.hosts != nil {
		sel = v.hosts()
		// Before the version is read, so a commit of a gained host wakes the view.
		if w, ok := v.src.(HostWaker); ok {
			w.WakeFor(sel)
		}
	}
	// The version before the rows: a commit after this read moves it again,
	// so the next Sync reads what this one may have missed.
	ver, err := v.src.DataVersion(ctx)
	if err != nil {
		return fmt.Errorf("live view: %w", err)
	}
	if !v.started {
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
		// Audit rows from the head on (hooks never hear history); entities from the start.
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
			// Load's rows are no news to subscribers.
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

// changes reads one batch of the feed, narrowed to the selection if any.
func (v *View) changes(ctx context.Context, c store.Cursor, f store.FeedFilter) (store.Batch, error) {
	if hs, ok := v.src.(HostSource); ok && v.hosts != nil {
		return hs.ChangesFor(ctx, c, f, batchSize)
	}
	return v.src.ChangesSince(ctx, c, batchSize)
}

// reselect moves the selection to sel: drops the hosts it leaves out and
// reads the added ones' entities from the start of the feed; the next feed
// read brings anything since. On error the old selection stays, to be
// moved again at the next Sync (both steps are idempotent).
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
			// A host gained is no change: the hooks hear its later changes only.
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
		// Derive outside the lock, so readers answer during a large Load.
		e := &b.Entities[i]
		v.words.entity(e)
		fresh[i] = newRecord(e, at)
	}
	var ed edit
	// A repeated entity: the index hears only its last version (nil: dropped).
	replaced := map[key]*record{}
	v.mu.Lock()
	cut := attention.Since(at, v.window)
	for i, n := range fresh {
		k := key{n.typ(), n.id}
		old := v.entries.Get(k.typ, k.id)
		_, again := replaced[k]
		if old != nil {
			holdID(n, &b.Entities[i], old.id)
			v.letGo(old)
			v.ungroup(groupOf(old))
			if !again {
				v.idx.change(old, -1, &ed)
			}
		} else if g, ok := v.gone.take(k); ok {
			v.ungroup(g)
		}
		v.groups[groupOf(n)]++
		if v.evict && n.evictable(cut) {
			// Aged out already: counted, never held; hooks hear it only if it was held.
			v.entries.Delete(k.typ, k.id)
			v.gone.put(k, groupOf(n))
			replaced[k] = nil
			if old == nil {
				continue
			}
		} else {
			if old == nil {
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
			// The entity before, rebuilt from its record.
			var prev *store.Entity
			if c.prev != nil {
				p := c.prev.entity()
				prev = &p
			}
			// Own copy: a pointer into the batch would keep it all alive.
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

// Run syncs every period (0: DefaultPeriod) until ctx ends; errors hears failures.
func (v *View) Run(ctx context.Context, every time.Duration, errors func(error)) {
	v.RunOn(ctx, nil, every, errors)
}

// RunOn syncs whenever wake receives, at most every minSyncGap, and a period
// after the last sync anyway, on the shared clock (ADR-0055); errors hears failures.
func (v *View) RunOn(ctx context.Context, wake <-chan struct{}, every time.Duration, errors func(error)) {
	if every <= 0 {
		every = DefaultPeriod
	}
	next := deadline.Shared().Signal()
	defer next.Stop()
	next.Set(every)
	var last time.Time
	deferred := false // a wake waits for the gap's end
	for {
		woken := false
		select {
		case <-ctx.Done():
			return
		case <-wake:
			if soon := last.Add(minSyncGap); time.Now().Before(soon) {
				// Too soon: the alarm syncs at the gap's end, for every commit by then.
				next.SetAt(soon)
				deferred = true
				continue
			}
			woken = true
		case <-next.C:
			woken, deferred = deferred, false
		case <-v.kick:
			// Now, and a second look too: a kick often follows a commit of
			// its own, whose event the kick's sync may precede.
			woken, deferred = true, false
		}
		last = time.Now()
		if woken {
			// A commit's event can come before the commit is visible (the WAL
			// is written before its index): look once more, shortly.
			next.Set(settleGap)
		} else {
			next.Set(every)
		}
		if err := v.Sync(ctx); err != nil && ctx.Err() == nil && errors != nil {
			errors(err)
		}
	}
}
