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
	"hash/maphash"
	"sync"
	"time"

	"watchdog/attention"
	"watchdog/internal/deadline"
	"watchdog/internal/entmap"
	"watchdog/store"
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
