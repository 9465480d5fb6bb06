package daemon

import (
	"context"
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

// leaderBackend is how this store elects the fleet's leader: PostgreSQL's
// session advisory lock where the store has one (held on a connection of
// its own: the lock goes with the connection, so a dead leader's is freed
// by the server), else a lease row (SQLite).
func leaderBackend(st store.Backend, holder string) leader.Backend {
	if pg, ok := st.(*pgstore.Store); ok {
		return &advisoryLock{st: pg}
	}
	if ls, ok := st.(leader.LeaseStore); ok {
		return leader.Lease{Store: ls, Holder: holder}
	}
	return leader.Always{}
}

// leaderLockKey is the advisory lock key the daemons of one PostgreSQL
// store contend for ("watchdog" in ASCII).
const leaderLockKey int64 = 0x7761746368646f67

// advisoryLock is a leader.Backend over pgstore's session advisory lock.
type advisoryLock struct {
	st   *pgstore.Store
	mu   sync.Mutex
	held *pgstore.Leadership
}

// TryLock keeps the lock while its connection lives, else tries to take it.
func (a *advisoryLock) TryLock(ctx context.Context) (bool, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.held != nil {
		select {
		case <-a.held.Done():
			a.held = nil // its connection is gone, and the lock with it
		default:
			return true, nil
		}
	}
	l, ok, err := a.st.TryLeader(ctx, leaderLockKey)
	if err != nil || !ok {
		return false, err
	}
	a.held = l
	return true, nil
}

// Unlock gives the lock up.
func (a *advisoryLock) Unlock(context.Context) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.held != nil {
		a.held.Release()
		a.held = nil
	}
	return nil
}
