// Package monitor is the event-driven core of liveness (ADR-0017,
// ADR-0055): one goroutine (Run) holds a pidfd watch per open local
// process and a timer heap of every timed judgement. It decides only when
// to look; the reaper re-checks, so an early or doubled deadline costs a
// probe, never a wrong verdict.
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

// Reaper is the reaper's per-entity entry points. A death the monitor saw
// comes with the event (judge.Event) and is not looked for again.
type Reaper interface {
	Observe(ctx context.Context, e store.Entity, ev judge.Event) (written bool, err error)
	EnforceEntity(ctx context.Context, e store.Entity, ev judge.Event) (acted bool, err error)
	ReapPhantomEntity(ctx context.Context, e store.Entity) (bool, error)
	CheckScheduleEntity(ctx context.Context, e store.Entity) (bool, error)
}

// Watcher is the pidfd watcher as the monitor uses it; Resync means
// deaths were dropped.
type Watcher interface {
	Watch(key string, pid int, same func() bool) error
	Forget(key string)
	Deaths() <-chan pidwatch.Death
	Resync() <-chan struct{}
}

// Tree is the process tree as the monitor uses it: pidfd-watched roots are
// kept there for their descendants and exit status.
type Tree interface {
	Watch(root proctree.Root) error
	Forget(root proctree.Root)
	Exits() <-chan proctree.Exit
	Resync() <-chan struct{}
	Refresh() error
	Mode() proctree.Mode
}

// Prober checks a recorded pid's identity before a watch is kept.
type Prober interface {
	CheckPID(t probe.PIDSubject) probe.PIDObservation
}

// Settings are the durations the deadlines are computed from.
type Settings struct {
	// Settings are the reaper's own, so a deadline comes exactly when the judgement changes.
	judge.Settings
	// PollInterval is how often a process not watchable by pidfd is checked.
	PollInterval time.Duration
}

// DefaultSettings are the config's defaults and a 5 s poll.
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

// Options are what a Monitor works with; only Reaper is required.
type Options struct {
	Reaper  Reaper
	Watcher Watcher
	Prober  Prober
	// Tree keeps the watched roots' descendants; nil: none kept.
	Tree Tree
	// Entity reads an entity whole for a reaper step (nil: each kept whole).
	Entity func(typ, id string) (store.Entity, bool)
	// HostID is this host's: only its entities are watched and timed.
	HostID   string
	Settings Settings
	Logger   *zap.Logger
	// Clock holds the heap's earliest deadline (nil: deadline.Shared).
	Clock *deadline.Clock
	// Now and StatMtime stand in for the clock and the file's stat in tests.
	Now       func() time.Time
	StatMtime func(e *store.Entity) (time.Time, error)
}

// Monitor schedules every open local entity's judgements. Update, Forget
// and SetSettings are safe from any goroutine; Run's goroutine applies them.
type Monitor struct {
	opt Options

	mu       sync.Mutex
	pending  map[key]*store.Entity // latest change per key; nil = forget
	settings *Settings             // a reload not yet applied
	wake     chan struct{}

	nPidfd, nPolled atomic.Int64
	// nResyncs counts the watcher's resyncs answered.
	nResyncs atomic.Int64
	// budgetSaid: the pidfd cap was reported (once per run).
	budgetSaid bool
	// busySince is when the running step began (UnixNano), 0 between steps.
	busySince atomic.Int64

	// nTreeResyncs counts the tree's resyncs.
	nTreeResyncs atomic.Int64
	// nFiles and nFilesPolled count the heartbeat files.
	nFiles, nFilesPolled atomic.Int64
	// known are the watched files' reads the sweep uses (HeartbeatFileAt);
	// nStatsSkipped counts the stats they saved.
	known         knownFiles
	nStatsSkipped atomic.Uint64
	// lstat reads a watched file for the sweep (lstatMtime; tests stand in).
	lstat func(e *store.Entity) (mtime time.Time, link bool, err error)

	// Owned by Run's goroutine.
	s    Settings
	ents table
	h    deadlineHeap
	// roots are the tracked entities by their tree root.
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
		lstat:   lstatMtime,
	}
}

func statMtime(e *store.Entity) (time.Time, error) {
	fi, err := asOwner(e, os.Stat)
	if err != nil {
		return time.Time{}, err
	}
	return fi.ModTime(), nil
}

// asOwner examines e's heartbeat file by stat (os.Stat or os.Lstat) with
// e's owner's rights.
func asOwner(e *store.Entity, stat func(string) (os.FileInfo, error)) (fi os.FileInfo, err error) {
	err = errors.New("the file could not be examined with its owner's rights")
	probe.AsOwner(judge.OwnerOf(e), func() { fi, err = stat(e.HeartbeatFile) })
	return fi, err
}

// Key is the watch key of an entity: "type/id".
func Key(typ, id string) string { return typ + "/" + id }

// key is an entity's key: the view's own strings, so it costs no string.
type key struct{ typ, id string }

func (tr *tracked) key() key { return key{tr.f.typ(), tr.f.id} }

func (tr *tracked) name() string { return Key(tr.f.typ(), tr.f.id) }

// byName is the tracked entity whose watch key is name, trying every "/".
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

// Update hands the monitor an entity as it now is; one not this host's, or
// ended, is forgotten.
func (m *Monitor) Update(e store.Entity) { m.UpdateShared(&e) }

// UpdateShared is Update without a copy: the caller must never change *e.
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

// Watching counts the processes watched by pidfd and those polled instead.
func (m *Monitor) Watching() (pidfd, polled int) {
	return int(m.nPidfd.Load()), int(m.nPolled.Load())
}

func (m *Monitor) poke() {
	select {
	case m.wake <- struct{}{}:
	default:
	}
}

// Run watches and fires deadlines until ctx ends, then forgets its watches.
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
		if m.fw == nil || m.fw.w == nil {
			return nil
		}
		return m.fw.w.Events
	}
	fileErrors := func() chan error {
		if m.fw == nil || m.fw.w == nil {
			return nil
		}
		return m.fw.w.Errors
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
			m.fileEvent(ctx, ev)
		case err := <-fileErrors():
			m.fileEventsLost(ctx, err)
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
			// Only exit statuses were lost: deaths are still the pidfds'.
			m.nTreeResyncs.Add(1)
			m.opt.Logger.Warn("the process tree missed exits (watchdog_process_tree_overflow_total): deaths are still seen by pidfd, their exit status only once reaped")
		}
	}
}

func (m *Monitor) applyPending(ctx context.Context) {
	m.mu.Lock()
	pending, s := m.pending, m.settings
	if len(pending) > 0 {
		// A fresh small map: one sized like a load's batch would stay that size.
		m.pending = map[key]*store.Entity{}
	} else {
		// Nothing taken: the writers' map must not be read without the lock.
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

func (m *Monitor) local(e store.Entity) bool {
	return e.HostID == "" || m.opt.HostID == "" || e.HostID == m.opt.HostID
}

// apply takes one entity's new state: its watch and deadline again.
func (m *Monitor) apply(ctx context.Context, k key, e *store.Entity) {
	if !e.Open() || !m.local(*e) {
		tr := m.ents.get(k)
		if tr == nil && m.local(*e) && e.Lifecycle != nil && (e.Health == state.HealthUnknown || e.Health == "") && e.EndedAt.After(m.opt.Now().Add(-m.s.Window())) {
			// Registered and ended between two looks, so never judged: judge once now.
			tr = &tracked{index: -1}
		}
		if tr != nil && tr.r().diedPID != 0 && tr.r().diedPID == tr.f.pid && !otherProcess(&tr.f, e) && judge.EndedByDeath(e) && len(e.LockFiles) == 0 && len(e.Artifacts) == 0 {
			// Ended for the death the monitor saw: already judged then.
			tr = nil
		}
		if tr != nil && m.local(*e) && e.Lifecycle != nil {
			// Just ended: judge its health as an ended entity's now.
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
			// Never judged: its first health is read now, not at the next sweep.
			tr.checkAt = stampOf(now)
		}
	} else if tr.f.heartbeatAt.time().Before(e.HeartbeatAt) && (e.Health == state.HealthIdle || e.Health == state.HealthStalled) {
		// A heartbeat to an idle or stalled entity: judge it now.
		tr.checkAt = stampOf(now)
	} else if h := e.Health; (h == state.HealthIdle || h == state.HealthStalled) && tr.r().fileToldAt.time().After(e.UpdatedAt) {
		// Judged idle or stalled before a touch of its file the monitor heard
		// (a sweep's look raced the event): judge it now.
		tr.checkAt = stampOf(now)
	} else if otherProcess(&tr.f, e) || (e.LastSeq != tr.f.lastSeq && tr.r().diedPID != 0 && e.DeadSince.IsZero()) {
		// Another process, or a lifecycle write over an unrecorded death: the
		// store refuses a check of the pre-transition copy, so judge now.
		tr.checkAt = stampOf(now)
	}
	if !fresh && otherProcess(&tr.f, e) && tr.rare != nil {
		// Another process, even under a reused pid: none of the last
		// one's death is its own.
		tr.rare.diedPID, tr.rare.exitPID, tr.rare.diedAt, tr.rare.heard = 0, 0, 0, nil
	}
	if !fresh && unsafe.StringData(tr.f.id) != unsafe.StringData(e.ID) {
		// A new id string for the same key: re-key, keeping no older copy.
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

func otherProcess(prev *facts, cur *store.Entity) bool {
	return pid32(cur.PID) != prev.pid || cur.PIDStartTicks != prev.pidStartTicks || !cur.PIDStartTime.Equal(prev.pidStart.time())
}

// wantsWatch says whether the entity has a live process of its own.
func wantsWatch(e store.Entity) bool {
	return e.PID > 0 && e.DeadSince.IsZero() && e.Health != state.HealthProcessDead
}

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
		// Without a recorded identity a pidfd could be the pid's next owner's.
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
		// Identity unreadable (fds, permission, hidepid): not proof, so poll.
		m.setMode(tr, polled)
		tr.rewatch = true
		tr.checkAt = stampOf(now.Add(m.s.PollInterval))
	case errors.Is(err, pidwatch.ErrNotSame), errors.Is(err, pidwatch.ErrGone):
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
