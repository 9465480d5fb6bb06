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
// elector, and which hosts' daemons were last seen alive. It exists before
// anything asks whether this daemon leads (the reaper, the monitor, the
// gauges), so all of them ask it.
type fleet struct {
	self    string
	elector *leader.Elector
	// alive is the set of hosts whose daemon was seen within
	// host_disconnected_after at the last presence tick; nil before the
	// first.
	alive atomic.Pointer[map[string]bool]
	// seen is when each host's daemon was last seen (a held lock counts
	// as now) at the last presence look; nil before the first.
	seen atomic.Pointer[map[string]time.Time]
	// locks reads which daemons hold a lock of the SQLite file (nil:
	// none can be read, or the store tells no commits: always a fleet).
	locks func() (store.HostLocks, error)
	// poke is told on every commit the store tells (while alone, a
	// newcomer's presence is one).
	poke chan struct{}
	// lastLocks is the lock table's last reading (nil: none).
	lastLocks atomic.Pointer[store.HostLocks]

	log *zap.Logger
	// sayMu guards said, the part in the fleet last logged (say).
	sayMu sync.Mutex
	said  string
}

// say logs this daemon's part in the fleet when it changed since the
// last line: leading alone, leading among others (elected), or following.
// It is what watchdog_leader says (Leader), with why; the elector's own
// lines bound each elected leadership in time.
func (f *fleet) say() {
	if f.log == nil {
		return
	}
	// Read and logged under the lock: the elector's callback and the
	// presence tick may both call, and the later reading must be the one
	// logged last.
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

// alone says whether this daemon is alone with its store now: it can read
// the daemons' locks, and no other host id's daemon holds one. It keeps
// the reading for presence.
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

// held is the last reading of the lock table (nil: none).
func (f *fleet) held() store.HostLocks {
	if l := f.lastLocks.Load(); l != nil {
		return *l
	}
	return nil
}

// nextHostDeadline is the next moment a silent host's judgement changes
// (host_disconnected_after or host_lost_after past its last presence),
// zero when none is ahead: what a lone daemon, which has no presence
// tick, waits for.
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

// Leader says whether this daemon does the host-less work now
// (watchdog_leader): it holds the leadership, or no other host's daemon is
// alive. A lone daemon so leads even while its store is too slow to renew
// a lease (a stalled disk, a long backup): there is nobody to hand the
// work to, and its gauges must not drop the host-less entities exactly
// when the store is in trouble.
func (f *fleet) Leader() bool { return f.elector.Leader() || f.solo() }

// solo says whether the last presence tick saw no other host's daemon
// alive.
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

// aliveHost says whether the daemon of host was seen alive at the last
// presence tick; before the first, every host counts as alive (nothing is
// claimed by mistake).
func (f *fleet) aliveHost(host string) bool {
	m := f.alive.Load()
	return m == nil || (*m)[host]
}

// Owns says whether this daemon counts and alerts on an entity of host:
// its own host's; while it leads, the host-less ones and those of hosts
// with no daemon alive (nobody else would). sum() across the fleet's
// daemons then counts each entity once.
func (f *fleet) Owns(host string) bool {
	return host == f.self || (f.Leader() && (host == "" || !f.aliveHost(host)))
}

// Hosts is the selection of hosts whose entities this daemon owns, which
// its live view holds (ADR-0056): its own host; while it leads, also the
// host-less entities and those of every host whose daemon is not alive
// (before the first presence tick every host counts as alive: its own and
// the host-less ones). Owns is true of exactly the hosts it selects.
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

// presenceEvery is how often a daemon records its presence in the store
// (store.MarkDaemon) and, while it leads, judges the hosts whose daemon
// fell silent: a few seconds, far below host_disconnected_after.
var presenceEvery = 2 * time.Second

// peerCheckGap is the least time between two reads of the lock table
// while alone: a burst of commits is one look.
var peerCheckGap = 250 * time.Millisecond

// runFleet takes part in the fleet sharing the store until the returned
// stop, which records this daemon's presence a last time and gives the
// leadership up.
//
// A daemon alone with its SQLite file (no other host id's daemon holds a
// lock of it: fleet.locks) writes nothing for the fleet: it records its
// presence once at start and once at its stop (what `watchdog status`
// reads as "last judged" once it is gone; while its lock is held it is
// judging now), takes no lease (nobody could contend), and leads. It
// looks at the lock table again on each commit the store tells (poke): a
// second daemon records its presence at its start, so it is seen within
// milliseconds, and from then on both keep presence and the lease on
// their tickers as before, until the other's lock is gone (ADR-0041).
// Elsewhere (PostgreSQL, no file events) it is always the fleet.
func (d *daemon) runFleet(ctx context.Context) (stop func()) {
	fctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	alone := d.fleet.alone()
	if d.fleet.locks == nil {
		// The first sweep already knows whether it leads.
		d.fleet.elector.Try(fctx)
	}
	d.presence(fctx, true)
	var wg sync.WaitGroup
	wg.Go(func() { d.fleetLoop(fctx, alone) })
	return func() {
		cancel()
		wg.Wait()
		// The stop's record: "last judged" for whoever reads the store
		// after this daemon is gone.
		sctx, scancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer scancel()
		d.presence(sctx, true)
	}
}

// fleetLoop keeps this daemon's part in the fleet until ctx ends: alone,
// it waits for a commit (a newcomer's presence) or a silent host's next
// deadline; in a fleet, it runs the elector and marks its presence every
// presenceEvery.
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
			// Leadership without a gap: this daemon led alone, and takes
			// the lease (free, or its own) before the newcomer's first
			// try, which waits one presenceEvery.
			d.fleet.elector.Try(ctx)
			d.presence(ctx, true)
			startElector()
		}
		// Presence's period is an alarm on the shared clock (ADR-0055).
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
				// A newcomer's first try comes here, one presenceEvery
				// after its presence told a lone daemon to take the lease.
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
// (true) or ctx ends (false). It judges the silent hosts at their next
// deadline, and looks at the lock table on each commit the store tells,
// at most once per peerCheckGap.
func (d *daemon) waitAlone(ctx context.Context, lastLook *time.Time) bool {
	// Both waits are alarms on the shared clock (ADR-0055): the next
	// silent host's deadline, and the end of peerCheckGap.
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

// presence marks this daemon alive in the store (when mark) and, on the
// leader, judges the silent hosts (reaper.JudgeHosts). It is not a job:
// it runs whatever the job schedules say, so a host's silence means its
// daemon is gone, not that its jobs are slow.
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
			// The start's mark names the machine: the page shows a host
			// by its hostname, its id on hover.
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
	// Every daemon keeps its picture of who is alive (ownership, whether
	// it is alone); only the leader judges the silent hosts.
	seen, err := d.st.DaemonsSeen(pctx)
	if err != nil {
		d.log.Warn("reading the fleet's presence", zap.Error(err))
		return
	}
	now := time.Now()
	held := d.fleet.held()
	alive := map[string]bool{}
	for h, at := range seen {
		// On SQLite a held lock is a daemon alive now and a lock not
		// held none, whatever the last record says: a lone daemon
		// records none while it runs, one stopped recorded its stop.
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
	// Who is alive decides what this daemon owns: its view follows.
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

// leading runs a job of host-less work only on the fleet's leader, checked
// at each fire; a lone daemon always leads.
func (d *daemon) leading(run func(context.Context) error) func(context.Context) error {
	return func(ctx context.Context) error {
		if !d.fleet.Leader() {
			return nil
		}
		return run(ctx)
	}
}

// PostgreSQL's leadership timing. The lock of a dead leader is free the
// moment the server sees its connection close (at once for a killed
// process, whose socket the kernel closes), so the handover is bounded by
// these, not by a lease: a follower asks every pgLeaderEvery, and having
// taken the lock waits pgLeaderTrust, the longest its predecessor may
// still trust its last proof of holding it, before it leads. A killed
// leader is replaced within pgLeaderEvery+pgLeaderTrust (one second),
// one fire of an "@every 1s" job; the leader proves its hold by one round
// trip per pgLeaderEvery, and a round trip slower than half a second
// costs it a moment of leadership, never a second leader.
const (
	pgLeaderEvery = 250 * time.Millisecond
	pgLeaderTrust = 750 * time.Millisecond
)

// lockTable is a store whose daemons each hold a lock file of it (SQLite):
// the locks held say who serves it now, without a write.
type lockTable interface {
	HostLocks() (store.HostLocks, error)
}

// sessionLocker is a store whose daemons lock by database sessions of
// their own (PostgreSQL): the fleet's leadership, and one daemon per host
// (holdHost). Asserted as this small interface, not as the driver's type,
// so that the daemon links no driver of its own.
type sessionLocker interface {
	LeaderLock(key int64, name string) store.SessionLock
}

// newElector elects this daemon's part in the fleet sharing st: PostgreSQL's
// session advisory lock where the store has one, else a lease row
// (SQLite) with the leader package's defaults.
func newElector(st store.Backend, holder string, log *zap.Logger, changed func()) *leader.Elector {
	// A change of leadership changes what this daemon owns: its view
	// follows at once (changed kicks it), not at the next commit.
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

// leaderLockKey is the advisory lock key the daemons of one PostgreSQL
// store contend for ("watchdog" in ASCII).
const leaderLockKey int64 = 0x7761746368646f67

// advisoryLock is a leader.Backend over the PostgreSQL store's session advisory lock.
// Taking the lock is not yet leading: another daemon could take it the
// moment the previous holder's connection died, while that holder still
// trusts its last proof for up to one Trust, so a fresh holder answers
// false (as if another led) until settle has passed since it took it.
type advisoryLock struct {
	lock   store.SessionLock
	settle time.Duration
	now    func() time.Time // nil: time.Now

	mu    sync.Mutex
	since time.Time // when this session took the lock; zero when not held
}

// TryLock takes the lock, or proves it still held, and says whether this
// daemon may lead.
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
		// Measured after the lock was granted: no earlier than it.
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
