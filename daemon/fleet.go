package daemon

import (
	"context"
	"fmt"
	"sync"
	"time"
	"watchdog/leader"
	"watchdog/store"
	"watchdog/store/pgstore"

	"go.uber.org/zap"
)

// presenceEvery is how often a daemon records its presence in the store
// (store.MarkDaemon) and, while it leads, judges the hosts whose daemon
// fell silent: a few seconds, far below host_disconnected_after.
var presenceEvery = 2 * time.Second

// runFleet takes part in the fleet sharing the store: it tries for the
// leadership once, records this daemon's presence once (so the first
// sweep already knows both), then keeps both up on their tickers until
// the returned stop, which gives the leadership up.
func (d *daemon) runFleet(ctx context.Context) (stop func()) {
	fctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	d.elector.Try(fctx)
	d.presence(fctx)
	stopElector := d.elector.Start(fctx)
	var wg sync.WaitGroup
	wg.Go(func() {
		t := time.NewTicker(presenceEvery)
		defer t.Stop()
		for {
			select {
			case <-fctx.Done():
				return
			case <-t.C:
				d.presence(fctx)
			}
		}
	})
	return func() {
		cancel()
		wg.Wait()
		stopElector()
	}
}

// presence marks this daemon alive in the store and, on the leader,
// judges the silent hosts (reaper.JudgeHosts). It is not a job: it runs
// whatever the job schedules say, so a host's silence means its daemon is
// gone, not that its jobs are slow.
func (d *daemon) presence(ctx context.Context) {
	if d.st.Lost() {
		return
	}
	pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := d.st.MarkDaemon(pctx, d.rp.HostID, time.Now()); err != nil {
		d.log.Warn("recording this daemon's presence", zap.Error(err))
		return
	}
	if !d.elector.Leader() {
		return
	}
	seen, err := d.st.DaemonsSeen(pctx)
	if err != nil {
		d.log.Warn("reading the fleet's presence", zap.Error(err))
		return
	}
	alive := map[string]bool{}
	for h, at := range seen {
		if time.Since(at) < d.rp.Settings.HostDisconnectedAfter {
			alive[h] = true
		}
	}
	d.alive.Store(&alive)
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
		if !d.elector.Leader() {
			return nil
		}
		return run(ctx)
	}
}

// aliveHost says whether the daemon of host was seen within
// host_disconnected_after at the leader's last look (presence); before
// any look, every host counts as alive (nothing is claimed by mistake).
func (d *daemon) aliveHost(host string) bool {
	m := d.alive.Load()
	return m == nil || (*m)[host]
}

// Leader says whether this daemon leads the fleet now (watchdog_leader).
func (d *daemon) Leader() bool { return d.elector.Leader() }

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

// newElector elects this daemon's part in the fleet sharing st: PostgreSQL's
// session advisory lock where the store has one, else a lease row
// (SQLite) with the leader package's defaults.
func newElector(st store.Backend, holder string, log *zap.Logger) *leader.Elector {
	if pg, ok := st.(*pgstore.Store); ok {
		return leader.New(&advisoryLock{lock: pg.LeaderLock(leaderLockKey, "watchdog leader "+holder), settle: pgLeaderTrust},
			leader.Options{Every: pgLeaderEvery, Trust: pgLeaderTrust, Log: log})
	}
	if ls, ok := st.(leader.LeaseStore); ok {
		return leader.New(leader.Lease{Store: ls, Holder: holder}, leader.Options{Log: log})
	}
	return leader.New(leader.Always{}, leader.Options{Log: log})
}

// leaderLockKey is the advisory lock key the daemons of one PostgreSQL
// store contend for ("watchdog" in ASCII).
const leaderLockKey int64 = 0x7761746368646f67

// lockTryer is the part of pgstore.LeaderLock an advisoryLock drives.
type lockTryer interface {
	Try(ctx context.Context) (held, fresh bool, err error)
	Release(ctx context.Context) error
}

// advisoryLock is a leader.Backend over pgstore's session advisory lock.
// Taking the lock is not yet leading: another daemon could take it the
// moment the previous holder's connection died, while that holder still
// trusts its last proof for up to one Trust, so a fresh holder answers
// false (as if another led) until settle has passed since it took it.
type advisoryLock struct {
	lock   lockTryer
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
