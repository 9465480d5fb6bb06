// Package monitor is the event-driven core of liveness (docs/reference/state-model.md, Probing): it holds
// a pidfd watch on every open local entity's process and a timer heap of
// every timed judgement, so a death is judged the moment the kernel reports
// it and a threshold at the moment it passes, not when a sweep comes round.
//
// One goroutine (Run) owns everything: the watches, the heap and the calls
// into the reaper. There are no per-entity goroutines and no periodic
// scan: the earliest deadline is one alarm on the process's one timer
// (internal/deadline, ADR-0055). The sweep stays,
// slower, as the reconciler of what events cannot see.
//
// The monitor decides only when to look; what is seen and done is the
// reaper's (CheckEntity probes and records, EnforceEntity and
// ReapPhantomEntity end through the write path with their own re-check and
// compare-and-set), so a deadline that fires early or twice costs a probe,
// never a wrong verdict.
package monitor

import (
	"context"
	"errors"
	"os"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/fsnotify/fsnotify"
	"go.uber.org/zap"

	"watchdog/internal/deadline"
	"watchdog/judge"
	"watchdog/pidwatch"
	"watchdog/probe"
	"watchdog/proctree"
	"watchdog/state"
	"watchdog/store"
)

// Reaper is the reaper's per-entity entry points: each judges or acts on
// one entity as its job would, re-reading what it must.
// A death the monitor saw comes with the event (judge.Event): not looked
// for again, its exit status written with it.
type Reaper interface {
	Observe(ctx context.Context, e store.Entity, ev judge.Event) (written bool, err error)
	EnforceEntity(ctx context.Context, e store.Entity, ev judge.Event) (acted bool, err error)
	ReapPhantomEntity(ctx context.Context, e store.Entity) (bool, error)
	CheckScheduleEntity(ctx context.Context, e store.Entity) (bool, error)
}

// Watcher is the pidfd watcher (pidwatch) as the monitor uses it. Resync
// says deaths were dropped at the watcher's full queue: the monitor then
// looks at every process it watches (resync).
type Watcher interface {
	Watch(key string, pid int, same func() bool) error
	Forget(key string)
	Deaths() <-chan pidwatch.Death
	Resync() <-chan struct{}
}

// Tree is the process tree (proctree.Tree) as the monitor uses it: each
// root watched by pidfd is kept there too, for its descendants (the
// leftover finding, read by the reaper) and for its exit status at its
// exit, reaped or not (Exits), which is recorded before the pidfd's
// PIDFD_INFO_EXIT. In walk mode the sets follow walks, one at each death.
type Tree interface {
	Watch(root proctree.Root) error
	Forget(root proctree.Root)
	Exits() <-chan proctree.Exit
	Resync() <-chan struct{}
	Refresh() error
	Mode() proctree.Mode
}

// Prober checks a recorded pid's identity (probe.Host.CheckPID): a watch
// is kept only for the very process that was recorded.
type Prober interface {
	CheckPID(t probe.PIDSubject) probe.PIDObservation
}

// Settings are the durations the deadlines are computed from: the config's
// thresholds and graces, and the fallback's poll interval.
type Settings struct {
	// Settings are the judgement's, the very ones the reaper applies, so
	// a deadline comes exactly when the judgement changes.
	judge.Settings
	// PollInterval is how often an entity whose process cannot be watched
	// by pidfd (ErrUnsupported, ErrNoFD, no start time recorded) is
	// checked.
	PollInterval time.Duration
}

// DefaultSettings are the config's defaults, and a 5 s poll: a death on a
// system without pidfds is seen within 5 s at the cost of one /proc read
// per polled process every 5 s (about 5µs each), where the sweep took a
// minute.
var DefaultSettings = Settings{
	Settings:     judge.DefaultSettings,
	PollInterval: 5 * time.Second,
}

func (s Settings) withDefaults() Settings {
	s.Settings = s.Settings.WithDefaults()
	if s.PollInterval <= 0 {
		s.PollInterval = DefaultSettings.PollInterval
	}
	return s
}

// Options are what a Monitor works with. Reaper is required; the rest
// may be nil: without Watcher every process is polled, without Prober no
// watch is opened (nothing could verify it).
type Options struct {
	Reaper  Reaper
	Watcher Watcher
	Prober  Prober
	// Tree keeps the watched roots' descendants; nil: none kept.
	Tree Tree
	// Entity reads an entity whole for a reaper step (the live view's,
	// View.Entity): the monitor then keeps only what its deadlines and
	// watch read of each (facts). nil: it keeps each entity whole, as
	// handed in.
	Entity func(typ, id string) (store.Entity, bool)
	// HostID is this host's: only its entities are watched and timed.
	HostID   string
	Settings Settings
	Logger   *zap.Logger
	// Clock holds the heap's earliest deadline (nil: the process's one,
	// deadline.Shared).
	Clock *deadline.Clock
	// Now and StatMtime stand in for the clock and the heartbeat file's
	// stat in tests; nil means time.Now and os.Stat with the entity
	// owner's rights (probe.AsOwner).
	Now       func() time.Time
	StatMtime func(e *store.Entity) (time.Time, error)
}

// Monitor schedules every open local entity's judgements. Update, Forget
// and SetSettings may be called from any goroutine, before or during Run;
// they hand their change to Run's goroutine and return at once.
type Monitor struct {
	opt Options

	mu       sync.Mutex
	pending  map[key]*store.Entity // latest change per key; nil = forget
	settings *Settings             // a reload not yet applied
	wake     chan struct{}

	nPidfd, nPolled atomic.Int64
	// nResyncs counts the watcher's resyncs answered (Resyncs).
	nResyncs atomic.Int64
	// budgetSaid: the watcher's cap was reported (once per run: the
	// gauge's poll count says the rest).
	budgetSaid bool
	// busySince is when the running step began (UnixNano), 0 between
	// steps (Stuck).
	busySince atomic.Int64

	// nTreeResyncs counts the tree's resyncs (TreeResyncs).
	nTreeResyncs atomic.Int64
	// nFiles and nFilesPolled count the heartbeat files (HeartbeatFiles).
	nFiles, nFilesPolled atomic.Int64

	// Owned by Run's goroutine.
	s    Settings
	ents table
	h    deadlineHeap
	// roots are the tracked entities by the root kept in the tree.
	roots map[proctree.Root]*tracked
	// fw watches the heartbeat files' directories (nil until one is).
	fw *files
}

// New returns a Monitor; Run starts it.
func New(opt Options) *Monitor {
	if opt.Logger == nil {
		opt.Logger = zap.NewNop()
	}
	if opt.Now == nil {
		opt.Now = time.Now
	}
	if opt.Clock == nil {
		opt.Clock = deadline.Shared()
	}
	if opt.StatMtime == nil {
		opt.StatMtime = statMtime
	}
	return &Monitor{
		opt:     opt,
		pending: map[key]*store.Entity{},
		wake:    make(chan struct{}, 1),
		s:       opt.Settings.withDefaults(),
		ents:    newTable(),
		roots:   map[proctree.Root]*tracked{},
	}
}

func statMtime(e *store.Entity) (time.Time, error) {
	var fi os.FileInfo
	err := errors.New("the file could not be examined with its owner's rights")
	probe.AsOwner(judge.OwnerOf(e), func() { fi, err = os.Stat(e.HeartbeatFile) })
	if err != nil {
		return time.Time{}, err
	}
	return fi.ModTime(), nil
}

// Key is the watch key of an entity: "type/id". The monitor makes one
// only for a watch (Watcher.Watch, Forget) and a log line: its map is
// keyed by the entity's own strings (key).
func Key(typ, id string) string { return typ + "/" + id }

// key is an entity's key: its type and id, the strings handed in (the
// view's), so a key costs no string of its own (table).
type key struct{ typ, id string }

// key is tr's key in the monitor's map.
func (tr *tracked) key() key { return key{tr.f.typ(), tr.f.id} }

// name is tr's watch key (Key), for a watch and a log line.
func (tr *tracked) name() string { return Key(tr.f.typ(), tr.f.id) }

// byName is the tracked entity whose watch key (Key) is name: a death's
// (pidwatch.Death.Key). An id holds no "/" (transitions' id shape), but
// a type is not checked here, so every split is tried, first "/" first:
// nil when none is tracked.
func (m *Monitor) byName(name string) *tracked {
	for i := 0; i < len(name); i++ {
		if name[i] != '/' {
			continue
		}
		if tr := m.ents.get(key{name[:i], name[i+1:]}); tr != nil {
			return tr
		}
	}
	return nil
}

// Update hands the monitor an entity as it now is: at start for each open
// entity (adoption), and on every change any writer made. An entity that
// is not this host's or has ended is forgotten.
func (m *Monitor) Update(e store.Entity) { m.UpdateShared(&e) }

// UpdateShared is Update without a copy: a monitor without
// Options.Entity keeps e itself. The caller must never change *e
// afterwards (the view hands each change its own copy).
func (m *Monitor) UpdateShared(e *store.Entity) {
	m.mu.Lock()
	m.pending[key{e.Type, e.ID}] = e
	m.mu.Unlock()
	m.poke()
}

// Forget drops an entity (deleted, or no longer this host's).
func (m *Monitor) Forget(typ, id string) {
	m.mu.Lock()
	m.pending[key{typ, id}] = nil
	m.mu.Unlock()
	m.poke()
}

// SetSettings applies a reload: every deadline is computed again.
func (m *Monitor) SetSettings(s Settings) {
	s = s.withDefaults()
	m.mu.Lock()
	m.settings = &s
	m.mu.Unlock()
	m.poke()
}

// Watching counts the processes watched by pidfd and those polled instead
// (the gauge watchdog_watched_processes{mode}).
func (m *Monitor) Watching() (pidfd, polled int) {
	return int(m.nPidfd.Load()), int(m.nPolled.Load())
}

func (m *Monitor) poke() {
	select {
	case m.wake <- struct{}{}:
	default:
	}
}

// Run watches and fires deadlines until ctx ends, then forgets its
// watches. It returns ctx's error.
func (m *Monitor) Run(ctx context.Context) error {
	var deaths <-chan pidwatch.Death
	var resync <-chan struct{}
	if m.opt.Watcher != nil {
		deaths, resync = m.opt.Watcher.Deaths(), m.opt.Watcher.Resync()
	}
	var exits <-chan proctree.Exit
	var treeResync <-chan struct{}
	if m.opt.Tree != nil {
		exits, treeResync = m.opt.Tree.Exits(), m.opt.Tree.Resync()
	}
	// The heap's earliest deadline is an alarm on the process's shared
	// clock (ADR-0055), armed again only when that deadline moves.
	alarm := m.opt.Clock.Signal()
	defer alarm.Stop()
	var armed time.Time
	defer func() {
		if m.fw != nil {
			m.fw.close()
		}
	}()
	defer m.forgetAll()
	files := func() chan fsnotify.Event {
		if m.fw == nil {
			return nil
		}
		return m.fw.events()
	}
	for {
		m.applyPending(ctx)
		m.fireDue(ctx)
		if next := m.h.peek(); next == nil {
			if !armed.IsZero() {
				alarm.Stop()
				armed = time.Time{}
			}
		} else if at := next.at.time(); !at.Equal(armed) {
			alarm.Set(max(at.Sub(m.opt.Now()), 0))
			armed = at
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-m.wake:
		case ev := <-files():
			m.fileChanged(ctx, ev.Name)
		case <-alarm.C:
			armed = time.Time{} // fired: the next turn arms it again
		case d, ok := <-deaths:
			if !ok {
				deaths = nil // the watcher closed: the polls and the sweep remain
				continue
			}
			m.death(ctx, m.byName(d.Key), d)
		case <-resync:
			m.resync(ctx)
		case x := <-exits:
			m.treeExit(ctx, x)
		case <-treeResync:
			// Exits were missed (the tree's queue was full, or the kernel
			// dropped events): the deaths themselves are the pidfds', so
			// nothing is lost but the statuses those exits carried, which
			// PIDFD_INFO_EXIT still gives for a reaped root.
			m.nTreeResyncs.Add(1)
			m.opt.Logger.Warn("the process tree missed exits (watchdog_process_tree_overflow_total): deaths are still seen by pidfd, their exit status only once reaped")
		}
	}
}

// applyPending takes the changes handed in since the last turn.
func (m *Monitor) applyPending(ctx context.Context) {
	m.mu.Lock()
	pending, s := m.pending, m.settings
	if len(pending) > 0 {
		// A fresh small map, not one sized like the last batch: the
		// load's thousands of entries would otherwise keep a map that
		// size for the daemon's lifetime.
		m.pending = map[key]*store.Entity{}
	} else {
		// Nothing taken: the map stays the one writers fill under the
		// lock, so it must not be read below without it (even empty).
		pending = nil
	}
	m.settings = nil
	m.mu.Unlock()
	if s != nil {
		m.s = *s
		for tr := range m.ents.all() {
			m.reschedule(tr)
		}
	}
	for k, e := range pending {
		if e == nil {
			m.drop(k)
			continue
		}
		m.apply(ctx, k, e)
	}
}

// local says whether the entity is this host's to watch and time.
func (m *Monitor) local(e store.Entity) bool {
	return e.HostID == "" || m.opt.HostID == "" || e.HostID == m.opt.HostID
}

// apply takes one entity's new state: (re)opens or drops its watch and
// computes its deadline again.
func (m *Monitor) apply(ctx context.Context, k key, e *store.Entity) {
	if !e.Open() || !m.local(*e) {
		tr := m.ents.get(k)
		if tr == nil && m.local(*e) && e.Lifecycle != nil && (e.Health == state.HealthUnknown || e.Health == "") && e.EndedAt.After(m.opt.Now().Add(-m.s.Window())) {
			// Registered and ended between two of the monitor's looks
			// (a short job on a busy host: the feed brings only its
			// newest state), so never judged: judged once now, as below,
			// rather than read "unknown" until the next sweep.
			tr = &tracked{index: -1}
		}
		if tr != nil && tr.r().diedPID != 0 && tr.r().diedPID == pid32(e.PID) && judge.EndedByDeath(e) && len(e.LockFiles) == 0 && len(e.Artifacts) == 0 {
			// Ended for the death the monitor saw: judged at the death,
			// with nothing at the end to look at.
			tr = nil
		}
		if tr != nil && m.local(*e) && e.Lifecycle != nil {
			// It has just ended (its owner's transition, exec's, the
			// reaper's): its health is judged now as an ended entity's
			// (its process expected gone: ok; still alive: orphaned),
			// not left at what it was while it ran ("Completed · Process
			// dead" when the exit was seen a moment before the owner's
			// end, "Completed · Alive" when not) until the next sweep.
			tr.setFacts(e, m.opt.HostID)
			tr.w().whole, tr.localDead = e, false
			m.check(ctx, tr)
		}
		m.drop(k)
		return
	}
	now := m.opt.Now()
	tr := m.ents.get(k)
	fresh := tr == nil
	if fresh {
		tr = &tracked{index: -1, judged: stampOf(now)}
		m.ents.put(k, tr)
		if e.Health == state.HealthUnknown {
			// Never judged (just registered, by any writer): its first
			// health is read now rather than at the next sweep, so a new
			// entity does not read "unknown" for a minute.
			tr.checkAt = stampOf(now)
		}
	} else if tr.f.heartbeatAt.time().Before(e.HeartbeatAt) && (e.Health == state.HealthIdle || e.Health == state.HealthStalled) {
		// A heartbeat posted to an idle or stalled entity: judge it now,
		// not at its next threshold.
		tr.checkAt = stampOf(now)
	} else if otherProcess(&tr.f, e) || (e.LastSeq != tr.f.lastSeq && tr.r().diedPID != 0 && e.DeadSince.IsZero()) {
		// Another process, or a lifecycle write over a death not yet
		// recorded: judge it now. A check made on the copy from before a
		// transition is refused by the store (an observation is written
		// only over the lifecycle it judged), so a death seen just after
		// a transition would otherwise wait for the sweep; and a
		// restarted process must not keep its predecessor's
		// process_dead (which also keeps it from being watched) until
		// then. Other transitions bring no check: each would be one more
		// durable write beside the transition's own.
		tr.checkAt = stampOf(now)
	}
	if !fresh && unsafe.StringData(tr.f.id) != unsafe.StringData(e.ID) {
		// The same key in an id string of its own: kept under it, as the
		// facts are below, so the monitor keeps no older copy of the id
		// beside its source's. The view hands every version of an entity
		// the one copy it holds (live/ids.go), so from the view this is
		// rare (an entity dropped and seen again). (The type is the
		// facts' one shared copy, typeBootOf.)
		m.ents.put(k, tr)
	}
	if fresh || tr.r().heartbeatFile != e.HeartbeatFile {
		if tr.rare != nil {
			tr.rare.hbFile = 0
		}
	}
	tr.setFacts(e, m.opt.HostID)
	tr.localDead = false
	if m.opt.Entity == nil {
		tr.w().whole = e
	}
	m.watch(ctx, tr, now)
	m.watchFile(tr)
	m.reschedule(tr)
}

// otherProcess says whether cur names another process than prev.
func otherProcess(prev *facts, cur *store.Entity) bool {
	return pid32(cur.PID) != prev.pid || cur.PIDStartTicks != prev.pidStartTicks || !cur.PIDStartTime.Equal(prev.pidStart.time())
}

// wantsWatch says whether the entity has a live process of its own to
// watch: a pid, and no death recorded yet.
func wantsWatch(e store.Entity) bool {
	return e.PID > 0 && e.DeadSince.IsZero() && e.Health != state.HealthProcessDead
}

// watch opens, keeps or drops the entity's watch to match its pid.
func (m *Monitor) watch(_ context.Context, tr *tracked, now time.Time) {
	e := tr.entity(m.opt.HostID)
	if root := tr.r().treeRoot; root.PID != 0 && root != rootOf(&tr.f) {
		m.forgetTree(tr) // another process now: its predecessor's tree is not its own
	}
	if !wantsWatch(e) || pid32(e.PID) == tr.r().diedPID {
		m.unwatch(tr)
		return
	}
	if tr.mode != unwatched && tr.watchedPID == pid32(e.PID) {
		return // the same process, still watched
	}
	m.unwatch(tr)
	tr.watchedPID = pid32(e.PID)
	identified := !e.PIDStartTime.IsZero() || e.PIDStartTicks != 0
	if m.opt.Watcher == nil || m.opt.Prober == nil || !identified {
		// Without a recorded identity a pidfd could be the pid's next
		// owner's: such a process is polled, never watched.
		m.setMode(tr, polled)
		tr.checkAt = stampOf(now.Add(m.s.PollInterval))
		return
	}
	subj := probe.PIDSubject{PID: e.PID, StartTime: e.PIDStartTime, StartTicks: e.PIDStartTicks, HostID: e.HostID, BootID: e.BootID}
	var seen probe.PIDObservation
	asked := false
	err := m.opt.Watcher.Watch(tr.name(), e.PID, func() bool {
		seen, asked = m.opt.Prober.CheckPID(subj), true
		return seen.IdentityVerified()
	})
	switch {
	case err == nil:
		m.setMode(tr, byPidfd)
		m.watchTree(tr)
	case errors.Is(err, pidwatch.ErrNotSame) && asked && seen.Liveness == probe.Unknown:
		// The identity could not be read (out of file descriptors for
		// /proc, permission, hidepid): not proof of another process, and
		// no pidfd either, so it is polled, and counted as polled.
		m.setMode(tr, polled)
		tr.rewatch = true
		tr.checkAt = stampOf(now.Add(m.s.PollInterval))
	case errors.Is(err, pidwatch.ErrNotSame), errors.Is(err, pidwatch.ErrGone):
		// The recorded process is not there: the probe says so now.
		m.setMode(tr, unwatched)
		tr.checkAt = stampOf(now)
	default:
		switch {
		case errors.Is(err, pidwatch.ErrBudget):
			if !m.budgetSaid {
				m.budgetSaid = true
				m.opt.Logger.Warn("pidfd cap reached: processes beyond it are polled every poll interval (watchdog_watched_processes{mode=\"poll\"}); a slot freed by a death goes to a polled process",
					zap.String("entity", tr.name()), zap.Duration("poll_interval", m.s.PollInterval), zap.Error(err))
			}
		case errors.Is(err, pidwatch.ErrNoFD):
		case errors.Is(err, pidwatch.ErrUnsupported):
		default:
			m.opt.Logger.Warn("pidfd watch failed; polling instead", zap.String("entity", tr.name()), zap.Error(err))
		}
		m.setMode(tr, polled)
		tr.rewatch = errors.Is(err, pidwatch.ErrNoFD)
		tr.checkAt = stampOf(now.Add(m.s.PollInterval))
	}
}

func (m *Monitor) setMode(tr *tracked, md mode) {
	counter := func(md mode) *atomic.Int64 {
		switch md {
		case byPidfd:
			return &m.nPidfd
		case polled:
			return &m.nPolled
		}
		return nil
	}
	if c := counter(tr.mode); c != nil {
		c.Add(-1)
	}
	if c := counter(md); c != nil {
		c.Add(1)
	}
	tr.mode = md
}

func (m *Monitor) unwatch(tr *tracked) {
	if tr.mode == byPidfd {
		m.opt.Watcher.Forget(tr.name())
	}
	if tr.mode == polled {
		tr.checkAt = 0
	}
	m.setMode(tr, unwatched)
	tr.watchedPID, tr.rewatch = 0, false
}

func (m *Monitor) drop(k key) {
	tr := m.ents.get(k)
	if tr == nil {
		return
	}
	m.unwatch(tr)
	m.forgetTree(tr)
	m.unwatchFile(tr)
	m.h.schedule(tr, time.Time{})
	m.ents.del(k)
}

func (m *Monitor) forgetAll() {
	for tr := range m.ents.all() {
		m.drop(tr.key())
	}
}

func (m *Monitor) reschedule(tr *tracked) {
	next, _ := deadlines(tr, m.opt.HostID, m.s, m.opt.Now())
	m.h.schedule(tr, next)
}

// TreeResyncs counts the process tree's resyncs the monitor has heard.
func (m *Monitor) TreeResyncs() int { return int(m.nTreeResyncs.Load()) }

// Resyncs counts the watcher's resyncs the monitor has answered.
func (m *Monitor) Resyncs() int { return int(m.nResyncs.Load()) }
