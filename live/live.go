// Package live keeps the daemon's one in-memory view of every entity,
// fed by the store's change feed, with each entity's derived state
// (severity, tone, display chain, outcome, attention items) computed once
// per change by Derive. Every surface of a running daemon reads it: the
// entity API and list, the attention queue, the metric gauges and
// systemd's STATUS=; the CLI without a daemon derives through the same
// Derive from the store.
//
// # Freshness
//
// A reader calls Sync before it answers: one cheap query (the store's data
// version) when nothing was committed, else the changed rows. So a GET
// right after a POST, or after a `watchdog ... --db` write by another
// process, reads its own write. Run syncs in the background, so push
// consumers (OnChange, OnTransitions: pidfd registration, the metric
// counters) hear of a change within one period without any reader.
//
// # What the counts mean
//
// Counts are the definitions every surface shares:
//   - an open entity is a non-legacy entity whose lifecycle is not
//     terminal (the stored terminal flag);
//   - an entity in the failure window has an outcome (a terminal or
//     outcome state of its graph) that it reached less than the failure
//     window ago (attention.AgedOut);
//   - a queue item is one attention item (entity, reason code) of an open
//     entity or one in the failure window, that no dismissal or snooze
//     hides now, its own or one carried over from a finding its reason
//     subsumes (attention.Acknowledgement); its severity is its entity's.
//
// The view holds every entity of the store, whichever host recorded it,
// unless given a selection of hosts (SetHosts): a daemon of a fleet holds
// what it owns, and reads the rest from the store when asked (For,
// EntryOf; ADR-0056). The counts the gauges read (Groups,
// ActiveReasons, QueueItems) carry each entity's host, so a daemon counts
// only what it owns; Counts and Attention are the whole view's.
//
// The daemon's view (EvictAgedOut) drops the ended entities that aged out
// of the failure window at their age-out, keeping only the group each
// counts in (evicted.go, ADR-0060): Holds then still means every current
// entity, and Complete says whether it holds every one, as a read that
// may list aged-out ones asks.
//
// Blind spot: the view holds every current entity in memory, about 1 KB
// each: a compact record (record.go) with its repeated words interned,
// from which a read rebuilds the Entry (BenchmarkViewMemory, ADR-0042);
// each dropped one costs about 45 bytes more, for good.
package live

import (
	"context"
	"fmt"
	"hash/maphash"
	"maps"
	"slices"
	"sync"
	"time"

	"watchdog/attention"
	"watchdog/internal/deadline"
	"watchdog/internal/entmap"
	"watchdog/internal/unixtime"
	"watchdog/state"
	"watchdog/store"
	"watchdog/transitions"
)

// Source is the change feed the view reads; *sqlite.Store is one. A
// PostgreSQL store implements DataVersion with LISTEN/NOTIFY (a counter
// the notifications move).
type Source interface {
	// ChangesSince returns the entities and audit rows written after c.
	ChangesSince(ctx context.Context, c store.Cursor, limit int) (store.Batch, error)
	// FeedHead is the cursor of the newest change.
	FeedHead(ctx context.Context) (store.Cursor, error)
	// DataVersion moves whenever anything is committed (entities, audit
	// rows, dismissals), by any writer.
	DataVersion(ctx context.Context) (int64, error)
	// Dismissals reads the whole (small) dismissals table.
	Dismissals(ctx context.Context) (map[string]store.Dismissal, error)
}

// HostSource is a Source that reads its feed by host (both stores): a
// view given a host selection (SetHosts) reads only the entities of the
// hosts it holds.
type HostSource interface {
	Source
	// ChangesFor is ChangesSince narrowed to some hosts' entities, and
	// with f.EntitiesOnly to no audit rows.
	ChangesFor(ctx context.Context, c store.Cursor, f store.FeedFilter, limit int) (store.Batch, error)
}

// HostWaker is a Source whose change signal can be narrowed to the
// commits of some hosts (the PostgreSQL store: each commit's notification
// names its hosts). A view with a selection of hosts tells it its
// selection before each Sync reads the version, so a burst on a host it
// does not hold does not wake it; the version still moves with every
// commit when read (the feed's head), so a read that syncs first still
// reflects every write.
type HostWaker interface {
	WakeFor(store.Hosts)
}

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

// Derived is what an entity's stored row implies, computed once per
// change. Nothing in it depends on the time of the read except through
// AgedOut, which the reader asks with its own now.
type Derived struct {
	// State is transitions.Normalize's NormalizedState (its EvaluatedAt is the
	// time of the change: a reader stamps its own).
	State state.NormalizedState
	// Display is the display chain.
	Display string
	// Items are the entity's attention items with the failure window and
	// dismissals not applied (attention.ItemsFor).
	Items []attention.Item
	// Codes are the codes of the reasons the entity holds (the
	// transition's, then the findings'), each once: what
	// watchdog_reasons_active counts.
	Codes []state.ReasonCode
}

// Entry is one entity of the view with its derived state, as a read
// gets it: the view keeps a compact record of each entity (record) and
// rebuilds its Entry when asked (Get, Each), so an Entry is the reader's
// own copy.
type Entry struct {
	Entity store.Entity
	Derived
	// arrived is attention.Arrived of the entity, without a monotonic
	// reading, so the failure window's rule is one comparison.
	arrived time.Time
	// lingers is attention.Lingers: an outcome that never ages out while
	// it lasts (an orphan whose process lives), counted like an open
	// entity's items.
	lingers bool
	// rec is the record the entry was rebuilt from (nil for one built
	// elsewhere).
	rec *record
}

// Ref is an entity of the view as one read saw it, a pointer's worth:
// a list keeps a Ref of every entity it selects (Each) and rebuilds only
// those of its page, as they were when selected.
type Ref struct{ r *record }

// Ref is the entity the entry was rebuilt from, as it was then.
func (e *Entry) Ref() Ref { return Ref{e.rec} }

// Entity rebuilds the entity (the zero Entity for a Ref of an Entry the
// view did not make).
func (r Ref) Entity() store.Entity {
	if r.r == nil {
		return store.Entity{}
	}
	return r.r.entity()
}

// Legacy reports whether the entity has no lifecycle.
func (e *Entry) Legacy() bool { return e.Entity.Lifecycle == nil }

// Open reports whether the entity is open: not legacy, not terminal.
func (e *Entry) Open() bool { return !e.Legacy() && !e.Entity.Terminal }

// AgedOut reports whether the entity reached its outcome before the
// failure window that ends at now began (attention.AgedOut).
func (e *Entry) AgedOut(now time.Time, window time.Duration) bool {
	return e.agedOut(attention.Since(now, window))
}

// Current reports whether the entity counts now: open, or with an outcome
// inside the failure window (legacy entities never do).
func (e *Entry) Current(now time.Time, window time.Duration) bool {
	return !e.Legacy() && !e.AgedOut(now, window)
}

// Derive computes an entity's derived state: the one function every
// surface's severity, tone, display chain and attention items come from,
// in the daemon (once per change) and in the CLI reading a store.
func Derive(e store.Entity, at time.Time) Derived {
	ns := transitions.Normalize(e, at)
	d := Derived{State: ns, Display: transitions.Display(e, ns), Items: attention.ItemsFor(e, ns)}
	if ns.Legacy() {
		return d
	}
	var transition state.ReasonCode
	if e.TransitionReason != nil && e.TransitionReason.Code != "" {
		transition = e.TransitionReason.Code
		d.Codes = append(d.Codes, transition)
	}
	for _, r := range e.Reasons {
		// A finding the end's reason subsumes is the same cause
		// (state.Subsumes): counted once, under the end's code.
		if r.Code != "" && !containsCode(d.Codes, r.Code) && !state.Subsumes(transition, r.Code) {
			d.Codes = append(d.Codes, r.Code)
		}
	}
	return d
}

func containsCode(list []state.ReasonCode, c state.ReasonCode) bool {
	for _, v := range list {
		if v == c {
			return true
		}
	}
	return false
}

type key struct{ typ, id string }

// View is the live view. Its methods are safe for concurrent use.
type View struct {
	src Source
	now func() time.Time

	// syncMu makes one Sync at a time read the feed, so batches apply in
	// order and each change reaches the hooks once.
	syncMu  sync.Mutex
	words   interner // the entities' repeated words; syncMu holds it
	cursor  store.Cursor
	version int64
	synced  bool // a Sync has completed
	started bool // the cursor is set
	// hosts, when set, is the selection of hosts the view holds, asked
	// at each Sync (SetHosts); nil holds every host.
	hosts func() store.Hosts
	// kick wakes RunOn for a Sync without a commit: the selection moved.
	kick chan struct{}

	mu sync.RWMutex
	// sel is the hosts whose entities the view holds now (read under mu,
	// written under both locks).
	sel store.Hosts
	// entries are the records it holds, keyed by the id alone (entmap).
	entries entmap.Map[record]
	// ids packs the ids of the entities it holds (ids.go); the feed's
	// apply alone uses it.
	ids idArena
	idx index
	// loose counts the records the view holds that are not in a slab,
	// dead the slab slots whose records it let go since its last
	// compaction (compact.go).
	loose, dead int
	groups      map[Group]int
	dismissals  map[string]store.Dismissal
	window      time.Duration

	// evict is whether the view drops the entities that aged out of the
	// failure window (EvictAgedOut); gone is what it keeps of each
	// (evicted.go). Both under mu.
	evict bool
	gone  gone
	// ageOut is the alarm at the earliest age-out (nil until
	// EvictAgedOut). refill counts the reloads that lengthened the
	// window and refilled those a Sync has read back after (readBack):
	// a reload during a read-back is read back again (under mu).
	ageOut   *deadline.Alarm
	refill   uint64
	refilled uint64

	hookMu        sync.Mutex
	onChange      []func(prev, cur *store.Entity)
	onTransitions []func([]store.AuditRow)

	// subMu holds subs, the open subscriptions (Subscribe).
	subMu sync.Mutex
	subs  map[*Subscription]struct{}
}

// New makes an empty view of src; Load fills it. now is the clock (nil
// means time.Now); window is the failure window (0 means
// attention.DefaultFailureWindow).
func New(src Source, now func() time.Time, window time.Duration) *View {
	if now == nil {
		now = time.Now
	}
	v := &View{src: src, now: now, entries: entmap.New(func(r *record) string { return r.typ() }), words: newInterner(), idx: newIndex(), groups: map[Group]int{},
		sel: store.AllHosts(), kick: make(chan struct{}, 1), gone: gone{seed: maphash.MakeSeed()}}
	v.SetFailureWindow(window)
	return v
}

// SetFailureWindow changes the failure window (0 means
// attention.DefaultFailureWindow): a config reload. A view that drops
// aged-out entities (EvictAgedOut) drops at once those a shorter window
// ages out, and reads back from the store at its next Sync those a longer
// one brings inside it again.
func (v *View) SetFailureWindow(d time.Duration) {
	if d <= 0 {
		d = attention.DefaultFailureWindow
	}
	v.mu.Lock()
	longer := d > v.window && v.window > 0
	v.window = d
	evict := v.evict
	if evict && longer && v.gone.len() > 0 {
		v.refill++
	}
	v.mu.Unlock()
	if evict {
		v.dropAgedOut()
		v.armAgeOut(time.Time{})
		if longer {
			v.Kick()
		}
	}
}

// FailureWindow is the failure window in force.
func (v *View) FailureWindow() time.Duration {
	v.mu.RLock()
	defer v.mu.RUnlock()
	return v.window
}

// OnChange adds fn, called after each applied entity change with the
// entity before (nil when new) and after, in the goroutine that syncs.
// fn must not call the view's Sync. Hooks added before Load hear every
// entity Load reads. cur is the change's own copy, which no one changes:
// fn may keep it (the view keeps a compact record, not the entity).
func (v *View) OnChange(fn func(prev, cur *store.Entity)) {
	v.hookMu.Lock()
	v.onChange = append(v.onChange, fn)
	v.hookMu.Unlock()
}

// OnTransitions adds fn, called with the audit rows of each feed read, in
// seq order. The view reads audit rows from the feed's head at Load, so
// fn hears every row written after Load began, never the history before.
func (v *View) OnTransitions(fn func([]store.AuditRow)) {
	v.hookMu.Lock()
	v.onTransitions = append(v.onTransitions, fn)
	v.hookMu.Unlock()
}

// SetHosts makes the view hold the entities of the hosts hosts selects
// (asked at every Sync), not every host's: a daemon of a fleet holds what
// it owns (ADR-0056). Call it before Load. A source that cannot read its
// feed by host (not a HostSource) keeps every host's.
func (v *View) SetHosts(hosts func() store.Hosts) {
	if _, ok := v.src.(HostSource); !ok {
		return
	}
	v.syncMu.Lock()
	v.hosts = hosts
	v.syncMu.Unlock()
}

// Kick asks RunOn for a Sync now: the selection of hosts may have moved
// (a leadership, a host's liveness) without a commit to tell it.
func (v *View) Kick() {
	select {
	case v.kick <- struct{}{}:
	default:
	}
}

// Holds says whether the view holds every current entity of host (open,
// or ended inside the failure window), "" meaning every host's: what a
// reader of the queue asks before it answers from the view rather than
// from the store (a read that may list aged-out ones asks Complete). A
// view without a selection holds all.
func (v *View) Holds(host string, all bool) bool {
	v.mu.RLock()
	defer v.mu.RUnlock()
	if all {
		return v.sel.Every()
	}
	return v.sel.Has(host)
}

// Complete says whether the view holds every entity of host ("" with
// all: every host's), those aged out of the failure window included: what
// a read that may list them (the entity list, one entity's read, the
// page's table) asks before it answers from the view rather than from the
// store. Holds is enough for a read of what counts now (the queue, the
// counts in the window), which a view that drops aged-out entities
// (EvictAgedOut) still holds whole.
func (v *View) Complete(host string, all bool) bool {
	v.mu.RLock()
	defer v.mu.RUnlock()
	if all {
		return v.sel.Every() && v.gone.len() == 0
	}
	return v.sel.Has(host) && !v.gone.has(host)
}

// Hosts is the selection of hosts the view holds now.
func (v *View) Hosts() store.Hosts {
	v.mu.RLock()
	defer v.mu.RUnlock()
	return v.sel
}

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

// Get returns an entity's entry, its state stamped evaluated at now.
func (v *View) Get(typ, id string, now time.Time) (Entry, bool) {
	v.mu.RLock()
	r := v.entries.Get(typ, id)
	v.mu.RUnlock()
	if r == nil {
		return Entry{}, false
	}
	// Records are never changed in place: rebuilt after the lock as it
	// was under it.
	return r.entry(now), true
}

// Entity is the entity typ/id as the view holds it, rebuilt without its
// derived state: what a reader that wants only the row reads (the
// daemon's monitor, for a reaper step), at the cost of a copy.
func (v *View) Entity(typ, id string) (store.Entity, bool) {
	v.mu.RLock()
	r := v.entries.Get(typ, id)
	v.mu.RUnlock()
	if r == nil {
		return store.Entity{}, false
	}
	return r.entity(), true
}

// Each calls fn for every entry (in no order), its state stamped
// evaluated at the view's now, under the view's read lock: fn must be
// quick and must not call the view. The entry is rebuilt for the call
// into one the next call reuses: fn must not keep the pointer, nor a
// pointer into it, past the call (a copy of a field is the caller's).
// typ, when not "", keeps that type only.
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

// Attention builds the attention queue at now from the view's items and
// dismissals: the same queue attention.Read builds from a store
// (attention.Assemble's rules, over items the view keeps in the queue's
// order, so a read walks them once and sorts nothing). q's FailureWindow,
// when 0, is the view's.
func (v *View) Attention(q attention.Query, now time.Time) attention.Queue {
	limit := q.Limit
	if limit <= 0 {
		limit = attention.DefaultLimit
	}
	type pick struct {
		r         itemRef
		dismissal *store.Dismissal
	}
	page := make([]pick, 0, min(limit, 64))
	bySeverity := map[state.Severity]int{}
	total := 0

	v.mu.RLock()
	if q.FailureWindow <= 0 {
		q.FailureWindow = v.window
	}
	cut := attention.Since(now, q.FailureWindow)
	ds := v.dismissals
	clusters := make([]int, len(v.idx.clusterIDs))
	// The queue is sorted by severity first: a run of one severity is
	// counted in run and added to bySeverity when it ends.
	var (
		runSeverity state.Severity
		run         int
	)
	for i := range v.idx.queue {
		r := &v.idx.queue[i]
		if r.agedOut(cut) {
			continue
		}
		if len(q.Severities) > 0 && !slices.Contains(q.Severities, r.severity) {
			continue
		}
		if q.Host != "" && r.e.host() != q.Host {
			continue
		}
		var dismissal *store.Dismissal
		if d, ok := attention.Acknowledgement(ds, r.item(), now); ok {
			if !q.IncludeDismissed {
				continue
			}
			dismissal = &d
		}
		total++
		if r.severity != runSeverity {
			if run > 0 {
				bySeverity[runSeverity] += run
			}
			runSeverity, run = r.severity, 0
		}
		run++
		clusters[r.cluster]++
		if len(page) < limit {
			page = append(page, pick{*r, dismissal})
		}
	}
	if run > 0 {
		bySeverity[runSeverity] += run
	}
	v.mu.RUnlock()

	out := attention.Queue{GeneratedAt: unixtime.Of(now), Total: total, BySeverity: bySeverity, Items: make([]attention.Item, 0, len(page))}
	for _, s := range attention.Severities {
		out.BySeverity[s] += 0
	}
	// Entries are never changed in place, so the page's items are read
	// after the lock as they were under it.
	for _, p := range page {
		it := p.r.item().At(now)
		it.ClusterSize = clusters[p.r.cluster]
		if p.dismissal != nil {
			it.MarkDismissed(*p.dismissal)
		}
		out.Items = append(out.Items, it)
	}
	return out
}

// EntityItems are the attention items of one entity as the queue serves
// them with include_dismissed at now (View.Attention's rules: none once
// the entity aged out of the failure window; each hidden one marked with
// its acknowledgement), in the entity's order; nil when it has none. The
// entity page's Snooze and Dismiss act on these.
func (v *View) EntityItems(typ, id string, now time.Time) []attention.Item {
	v.mu.RLock()
	defer v.mu.RUnlock()
	e := v.entries.Get(typ, id)
	if e == nil || len(e.items) == 0 || e.agedOut(attention.Since(now, v.window)) {
		return nil
	}
	out := make([]attention.Item, 0, len(e.items))
	for i := range e.items {
		it := e.items[i].At(now)
		if d, ok := attention.Acknowledgement(v.dismissals, &e.items[i], now); ok {
			it.MarkDismissed(d)
		}
		out = append(out, it)
	}
	return out
}

// Dismissal returns the dismissal of a fingerprint, if any.
func (v *View) Dismissal(fp string) (store.Dismissal, bool) {
	v.mu.RLock()
	defer v.mu.RUnlock()
	d, ok := v.dismissals[fp]
	return d, ok
}

// For is what answers a read of host's entities (all: every host's),
// synced first: the view itself when it holds every one (Complete), else
// (a daemon of a fleet holds what it owns, ADR-0056; the daemon's view
// drops what aged out, ADR-0060) a view of those hosts read from the
// store now, which the read uses and drops. Either way the entries are
// Derive's over the store's rows, and a write acknowledged before the read
// by any daemon is in the answer.
func (v *View) For(ctx context.Context, host string, all bool) (*View, error) {
	return v.forRead(ctx, host, all, v.Complete)
}

// forRead is For, answering from the view when holds says it holds
// host's entities (Complete for a list, Holds for the queue).
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

// EntryOf is the Entry of an entity the view does not hold (another
// host's, read from the store), derived at now as the view derives its
// own.
func EntryOf(e store.Entity, now time.Time) Entry {
	w := newInterner()
	w.entity(&e)
	return newRecord(&e, now).entry(now)
}
