// Package live keeps the daemon's one in-memory view of every entity, fed by
// the store's change feed, each entity derived once per change by Derive
// (ADR-0019). A reader calls Sync first, so it reads every acknowledged
// write. A fleet daemon holds only its own hosts (ADR-0056) and may drop
// aged-out entities (ADR-0060): Holds and Complete say what it can answer.
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

// Source is the change feed the view reads; *sqlite.Store is one.
type Source interface {
	// ChangesSince returns the entities and audit rows written after c.
	ChangesSince(ctx context.Context, c store.Cursor, limit int) (store.Batch, error)
	// FeedHead is the cursor of the newest change.
	FeedHead(ctx context.Context) (store.Cursor, error)
	// DataVersion moves whenever anything is committed, by any writer.
	DataVersion(ctx context.Context) (int64, error)
	// Dismissals reads the whole (small) dismissals table.
	Dismissals(ctx context.Context) (map[string]store.Dismissal, error)
}

// HostSource is a Source that reads its feed by host.
type HostSource interface {
	Source
	// ChangesFor is ChangesSince for some hosts' entities (f.EntitiesOnly: no audit rows).
	ChangesFor(ctx context.Context, c store.Cursor, f store.FeedFilter, limit int) (store.Batch, error)
}

// HostWaker is a Source whose change signal can be narrowed to some hosts'
// commits (ADR-0057); a read that syncs first still sees every write.
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
	// hosts, when set, selects the hosts held, asked at each Sync; nil: all.
	hosts func() store.Hosts
	// kick wakes RunOn for a Sync without a commit: the selection moved.
	kick chan struct{}

	mu sync.RWMutex
	// sel is the hosts held now (read under mu, written under both locks).
	sel store.Hosts
	// entries are the records it holds, keyed by the id alone (entmap).
	entries entmap.Map[record]
	// ids packs the held entities' ids (ids.go); only the feed's apply uses it.
	ids idArena
	idx index
	// loose counts records outside slabs, dead freed slab slots (compact.go).
	loose, dead int
	groups      map[Group]int
	dismissals  map[string]store.Dismissal
	window      time.Duration

	// evict and gone: dropping aged-out entities (evicted.go). Both under mu.
	evict bool
	gone  gone
	// ageOut is the earliest age-out's alarm. refill counts window-lengthening
	// reloads, refilled those read back: one mid read-back reads again (mu).
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

// New makes an empty view of src; Load fills it. nil now is time.Now, 0 window the default.
func New(src Source, now func() time.Time, window time.Duration) *View {
	if now == nil {
		now = time.Now
	}
	v := &View{src: src, now: now, entries: entmap.New(func(r *record) string { return r.typ() }), words: newInterner(), idx: newIndex(), groups: map[Group]int{},
		sel: store.AllHosts(), kick: make(chan struct{}, 1), gone: gone{seed: maphash.MakeSeed()}}
	v.SetFailureWindow(window)
	return v
}

// SetFailureWindow changes the failure window (a reload): an evicting view
// drops what a shorter one ages out, and reads back what a longer one brings in.
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
// fn must not call Sync; it may keep cur, which no one changes.
func (v *View) OnChange(fn func(prev, cur *store.Entity)) {
	v.hookMu.Lock()
	v.onChange = append(v.onChange, fn)
	v.hookMu.Unlock()
}

// OnTransitions adds fn, called with each feed read's audit rows in seq
// order: those written after Load began, never older history.
func (v *View) OnTransitions(fn func([]store.AuditRow)) {
	v.hookMu.Lock()
	v.onTransitions = append(v.onTransitions, fn)
	v.hookMu.Unlock()
}

// SetHosts makes the view hold only the hosts that hosts selects, at each Sync
// (ADR-0056); call it before Load. A non-HostSource keeps every host's.
func (v *View) SetHosts(hosts func() store.Hosts) {
	if _, ok := v.src.(HostSource); !ok {
		return
	}
	v.syncMu.Lock()
	v.hosts = hosts
	v.syncMu.Unlock()
}

// Kick asks RunOn for a Sync now: the host selection may have moved.
func (v *View) Kick() {
	select {
	case v.kick <- struct{}{}:
	default:
	}
}

// Holds says whether the view holds every current entity (open, or ended
// inside the failure window) of host, or of every host with all.
func (v *View) Holds(host string, all bool) bool {
	v.mu.RLock()
	defer v.mu.RUnlock()
	if all {
		return v.sel.Every()
	}
	return v.sel.Has(host)
}

// Complete is Holds with aged-out entities included, for a read that may
// list them.
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
