package daemon

import (
	"context"
	"fmt"
	"os"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"watchdog/internal/deadline"
	"watchdog/leader"
	"watchdog/reaper"
	"watchdog/store"
)

// fleet is this daemon's place among the daemons sharing its store: the
// elector and who was last seen alive.
type fleet struct {
	self    string
	elector *leader.Elector
	// alive: hosts seen within host_disconnected_after at the last look; nil before the first.
	alive atomic.Pointer[map[string]bool]
	// seen: when each host's daemon was last seen (a held lock counts as now).
	seen atomic.Pointer[map[string]time.Time]
	// locks reads the SQLite file's lock table (nil: not readable, always a fleet).
	locks func() (store.HostLocks, error)
	// poke is told on every commit the store tells.
	poke chan struct{}
	// lastLocks is the lock table's last reading (nil: none).
	lastLocks atomic.Pointer[store.HostLocks]

	log *zap.Logger
	// sayMu guards said, the part last logged.
	sayMu sync.Mutex
	said  string
}

// say logs this daemon's part in the fleet when it changed.
func (f *fleet) say() {
	if f.log == nil {
		return
	}
	// Under the lock, so the later of two callers' readings is logged last.
	f.sayMu.Lock()
	defer f.sayMu.Unlock()
	m := f.alive.Load()
	if m == nil {
		return // no presence look yet: who else is here is not known
	}
	leading, solo := f.Leader(), f.solo()
	var peers []string
	for h, alive := range *m {
		if alive && h != f.self {
			peers = append(peers, h)
		}
	}
	sort.Strings(peers)
	part := "following"
	switch {
	case leading && solo:
		part = "alone"
	case leading:
		part = "elected"
	}
	if part == f.said {
		return
	}
	f.said = part
	switch part {
	case "alone":
		f.log.Info("leadership: leading alone (no other daemon is alive on this store): this daemon does the host-less work")
	case "elected":
		f.log.Info("leadership: leading, elected among the daemons alive on this store", zap.Strings("peers", peers))
	default:
		f.log.Info("leadership: following: another daemon alive on this store does the host-less work", zap.Strings("peers", peers))
	}
}

// alone says whether no other host's daemon holds a lock of the store now.
func (f *fleet) alone() bool {
	if f.locks == nil {
		return false
	}
	l, err := f.locks()
	if err != nil {
		f.lastLocks.Store(nil)
		return false
	}
	f.lastLocks.Store(&l)
	return !l.Others(f.self)
}

func (f *fleet) held() store.HostLocks {
	if l := f.lastLocks.Load(); l != nil {
		return *l
	}
	return nil
}

// nextHostDeadline is the next moment a silent host's judgement changes
// (zero: none): what a lone daemon waits for.
func (f *fleet) nextHostDeadline(s reaper.Settings, now time.Time) time.Time {
	m := f.seen.Load()
	if m == nil {
		return time.Time{}
	}
	disc, lost := s.HostDisconnectedAfter, s.HostLostAfter
	if disc <= 0 {
		disc = reaper.DefaultSettings.HostDisconnectedAfter
	}
	if lost <= disc {
		lost = max(reaper.DefaultSettings.HostLostAfter, disc+time.Second)
	}
	var next time.Time
	for h, at := range *m {
		if h == f.self || h == "" {
			continue
		}
		for _, d := range []time.Time{at.Add(disc), at.Add(lost)} {
			if d.After(now) && (next.IsZero() || d.Before(next)) {
				next = d
			}
		}
	}
	if !next.IsZero() {
		// A moment after: JudgeHosts compares with its own clock.
		next = next.Add(10 * time.Millisecond)
	}
	return next
}

// Leader says whether this daemon does the host-less work now: it holds
// the leadership, or no other daemon is alive. A lone daemon leads even
// when its store is too slow to renew a lease: nobody else could.
func (f *fleet) Leader() bool { return f.elector.Leader() || f.solo() }

// solo says whether the last presence look saw no other daemon alive.
func (f *fleet) solo() bool {
	m := f.alive.Load()
	if m == nil {
		return false
	}
	for h, alive := range *m {
		if alive && h != f.self {
			return false
		}
	}
	return true
}

// aliveHost says whether host's daemon was seen alive; before the first
// look every host counts as alive, so nothing is claimed by mistake.
func (f *fleet) aliveHost(host string) bool {
	m := f.alive.Load()
	return m == nil || (*m)[host]
}

// Owns says whether this daemon counts and alerts on host's entities: its
// own and, while leading, host-less and dead hosts' (once per fleet).
func (f *fleet) Owns(host string) bool {
	return host == f.self || (f.Leader() && (host == "" || !f.aliveHost(host)))
}

// Hosts is the selection of hosts this daemon owns, which its live view
// holds (ADR-0056); Owns is true of exactly these.
func (f *fleet) Hosts() store.Hosts {
	if !f.Leader() {
		return store.Only(f.self)
	}
	m := f.alive.Load()
	if m == nil {
		return store.Only(f.self, "")
	}
	var others []string
	for h, alive := range *m {
		if alive && h != f.self && h != "" {
			others = append(others, h)
		}
	}
	sort.Strings(others)
	return store.AllBut(others...)
}

// presenceEvery is how often a daemon records its presence, far below
// host_disconnected_after.
var presenceEvery = 2 * time.Second

// peerCheckGap is the least time between two lock-table reads while alone.
var peerCheckGap = 250 * time.Millisecond

// runFleet takes part in the fleet until the returned stop, which records
// presence a last time and gives the leadership up. A daemon alone with
// its SQLite file writes nothing for the fleet until another shows up
// (ADR-0041); PostgreSQL is always a fleet.
func (d *daemon) runFleet(ctx context.Context) (stop func()) {
	fctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	alone := d.fleet.alone()
	if d.fleet.locks == nil {
		d.fleet.elector.Try(fctx)
	}
	d.presence(fctx, true)
	var wg sync.WaitGroup
	wg.Go(func() { d.fleetLoop(fctx, alone) })
	return func() {
		cancel()
		wg.Wait()
		// The stop's record: "last judged" once this daemon is gone.
		sctx, scancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer scancel()
		d.presence(sctx, true)
	}
}

// fleetLoop keeps this daemon's part in the fleet until ctx ends.
func (d *daemon) fleetLoop(ctx context.Context, alone bool) {
	running, stopElector := false, func() {}
	startElector := func() {
		if !running {
			stopElector, running = d.fleet.elector.Start(ctx), true
		}
	}
	defer func() {
		if running {
			stopElector()
		}
	}()
	if !alone && d.fleet.locks == nil {
		startElector()
	}
	var lastLook time.Time
	for {
		if alone {
			if !d.waitAlone(ctx, &lastLook) {
				return
			}
			d.log.Info("another daemon shares the store: recording presence and contending for the lease every few seconds")
			// No leadership gap: take the lease before the newcomer's first try.
			d.fleet.elector.Try(ctx)
			d.presence(ctx, true)
			startElector()
		}
		tick := deadline.Shared().Signal()
		tick.Set(presenceEvery)
		for !alone {
			select {
			case <-ctx.Done():
				tick.Stop()
				return
			case <-tick.C:
			}
			tick.Set(presenceEvery)
			if d.fleet.locks != nil {
				alone = d.fleet.alone()
			}
			if !alone {
				startElector()
			}
			d.presence(ctx, true)
		}
		tick.Stop()
		d.log.Info("alone with the store again: no presence or lease writes until another daemon shares it")
		if running {
			stopElector()
			running = false
		}
	}
}

// waitAlone waits, alone with the store, until another daemon shares it
// (true) or ctx ends (false), judging silent hosts meanwhile.
func (d *daemon) waitAlone(ctx context.Context, lastLook *time.Time) bool {
	due, gap := deadline.Shared().Signal(), deadline.Shared().Signal()
	defer due.Stop()
	defer gap.Stop()
	for {
		if next := d.fleet.nextHostDeadline(d.rp.Settings, time.Now()); !next.IsZero() {
			due.SetAt(next)
		} else {
			due.Stop()
		}
		select {
		case <-ctx.Done():
			return false
		case <-due.C:
			d.presence(ctx, false)
			continue
		case <-d.fleet.poke:
		}
		if soon := lastLook.Add(peerCheckGap); time.Now().Before(soon) {
			gap.SetAt(soon)
			select {
			case <-ctx.Done():
				return false
			case <-gap.C:
			}
		}
		*lastLook = time.Now()
		if !d.fleet.alone() {
			return true
		}
	}
}

// presence marks this daemon alive (when mark) and, on the leader, judges
// the silent hosts. It is not a job, so a silent host means its daemon is
// gone, not that its jobs are slow.
func (d *daemon) presence(ctx context.Context, mark bool) {
	if d.paused() {
		d.skipped.Add(1)
		return
	}
	pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if mark {
		var err error
		if d.named.Load() {
			err = d.st.MarkDaemon(pctx, d.rp.HostID, time.Now())
		} else {
			name, _ := os.Hostname() // "" when unreadable: the page shows the id
			if err = d.st.MarkDaemonStart(pctx, d.rp.HostID, name, time.Now()); err == nil {
				d.named.Store(true)
			}
		}
		if err != nil {
			d.log.Warn("recording this daemon's presence", zap.Error(err))
			return
		}
	}
	// Every daemon keeps who is alive; only the leader judges silent hosts.
	seen, err := d.st.DaemonsSeen(pctx)
	if err != nil {
		d.log.Warn("reading the fleet's presence", zap.Error(err))
		return
	}
	now := time.Now()
	held := d.fleet.held()
	alive := map[string]bool{}
	for h, at := range seen {
		// On SQLite the lock table decides: a lone daemon records no presence.
		switch {
		case held == nil:
			alive[h] = now.Sub(at) < d.rp.Settings.HostDisconnectedAfter
		case held.Holds(h):
			seen[h], alive[h] = now, true
		}
	}
	d.fleet.alive.Store(&alive)
	d.fleet.seen.Store(&seen)
	d.fleet.say()
	d.view.Kick()
	if !d.fleet.Leader() {
		return
	}
	rep, err := d.rp.JudgeHosts(pctx, seen)
	if err != nil {
		d.log.Warn("judging silent hosts", zap.Error(err))
		return
	}
	if rep.Written > 0 {
		d.log.Warn("hosts whose daemon is silent: their open entities read disconnected or lost (never ended here)",
			zap.Strings("disconnected", rep.Disconnected), zap.Strings("lost", rep.Lost), zap.Int("entities_written", rep.Written))
	}
}

// leading runs a host-less job only on the fleet's leader.
func (d *daemon) leading(run func(context.Context) error) func(context.Context) error {
	return func(ctx context.Context) error {
		if !d.fleet.Leader() {
			return nil
		}
		return run(ctx)
	}
}

// PostgreSQL's leadership timing: a dead leader's lock frees when its
// connection closes, so handover takes at most pgLeaderEvery+pgLeaderTrust;
// a slow round trip costs leadership, never a second leader (ADR-0029).
const (
	pgLeaderEvery = 250 * time.Millisecond
	pgLeaderTrust = 750 * time.Millisecond
)

// lockTable is a store whose daemons each hold a lock file of it (SQLite).
type lockTable interface {
	HostLocks() (store.HostLocks, error)
}

// sessionLocker is a PostgreSQL store's session locks; an interface, so
// the daemon links no driver.
type sessionLocker interface {
	LeaderLock(key int64, name string) store.SessionLock
}

// newElector elects by advisory lock (PostgreSQL) or lease row (SQLite).
func newElector(st store.Backend, holder string, log *zap.Logger, changed func()) *leader.Elector {
	// A leadership change changes what this daemon owns: kick its view.
	on := func(bool) { changed() }
	if sl, ok := st.(sessionLocker); ok {
		return leader.New(&advisoryLock{lock: sl.LeaderLock(leaderLockKey, "watchdog leader "+holder), settle: pgLeaderTrust},
			leader.Options{Every: pgLeaderEvery, Trust: pgLeaderTrust, Log: log, OnChange: on})
	}
	if ls, ok := st.(leader.LeaseStore); ok {
		return leader.New(leader.Lease{Store: ls, Holder: holder}, leader.Options{Log: log, OnChange: on})
	}
	return leader.New(leader.Always{}, leader.Options{Log: log, OnChange: on})
}

// leaderLockKey is the daemons' advisory lock key ("watchdog" in ASCII).
const leaderLockKey int64 = 0x7761746368646f67

// advisoryLock is a leader.Backend over PostgreSQL's advisory lock. A
// fresh holder does not lead until settle has passed: its predecessor may
// still trust its last proof for one Trust.
type advisoryLock struct {
	lock   store.SessionLock
	settle time.Duration
	now    func() time.Time // nil: time.Now

	mu    sync.Mutex
	since time.Time // when this session took the lock; zero when not held
}

// TryLock takes or proves the lock and says whether this daemon may lead.
func (a *advisoryLock) TryLock(ctx context.Context) (bool, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	now := time.Now
	if a.now != nil {
		now = a.now
	}
	held, fresh, err := a.lock.Try(ctx)
	if err != nil {
		was := !a.since.IsZero()
		a.since = time.Time{}
		if was {
			return false, fmt.Errorf("%w: %w", leader.ErrLost, err)
		}
		return false, err
	}
	if !held {
		a.since = time.Time{}
		return false, nil
	}
	if fresh || a.since.IsZero() {
		a.since = now()
	}
	return now().Sub(a.since) >= a.settle, nil
}

// Unlock gives the lock up.
func (a *advisoryLock) Unlock(ctx context.Context) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.since = time.Time{}
	return a.lock.Release(ctx)
}
