package daemon

import (
	"context"
	"sync"
	"time"

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

// Owns says whether this daemon counts an entity of host in its gauges:
// its own host's, and the host-less ones while it leads, so that sum()
// across a fleet's daemons counts each entity once.
func (d *daemon) Owns(host string) bool {
	return host == d.rp.HostID || (host == "" && d.elector.Leader())
}

// Leader says whether this daemon leads the fleet now (watchdog_leader).
func (d *daemon) Leader() bool { return d.elector.Leader() }
