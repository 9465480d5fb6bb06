package daemon

import (
	"context"
	"slices"
	"sync"
	"time"

	"go.uber.org/zap"

	"watchdog/alertpush"
	"watchdog/config"
	"watchdog/internal/deadline"
	"watchdog/store"
)

// pushing is the running Alertmanager pusher, if any: the config it was
// made from and how to stop it.
type pushing struct {
	cfg    config.Alertmanager
	pusher *alertpush.Pusher
	stop   func()
}

// startPush starts pushing to the configured Alertmanagers, if any, in a
// goroutine of its own; the daemon's loop never waits for it. It first
// waits for the live view to have loaded: pushing an empty view would
// resolve every alert Alertmanager holds for this host, then fire them
// all again.
func (d *daemon) startPush() {
	am := d.cfg.Alertmanager
	if !am.Enabled() {
		return
	}
	pcfg := alertpush.Config{
		URLs: am.URLs, ResendEvery: time.Duration(am.ResendEvery), Timeout: time.Duration(am.Timeout),
		RunbookURL: am.RunbookURL, Host: d.rp.HostID,
		// In a fleet each daemon pushes what it owns, as its gauges count
		// it: one alert per item across the fleet.
		Owns: func(e store.Entity) bool { return d.fleet.Owns(e.HostID) },
	}
	if d.pushPoke == nil {
		pcfg.CheckEvery = pushCheckEvery
	}
	p := alertpush.New(pcfg, d.view, d.pushMetrics, d.log.Named("alertmanager"))
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() {
		retry := deadline.Shared().Signal()
		defer retry.Stop()
		for d.view.Sync(ctx) != nil {
			retry.Set(time.Second)
			select {
			case <-ctx.Done():
				return
			case <-retry.C:
			}
		}
		if d.pushPoke != nil {
			// A commit may have changed the queue without an entity
			// change (a snooze, a dismissal): the view synced, the
			// pusher looks.
			wg.Go(func() {
				for {
					select {
					case <-ctx.Done():
						return
					case <-d.pushPoke:
					}
					if d.view.Sync(ctx) == nil {
						p.Kick()
					}
				}
			})
		}
		p.Run(ctx)
	})
	d.mu.Lock()
	d.push = &pushing{cfg: am, pusher: p, stop: func() { cancel(); wg.Wait() }}
	d.mu.Unlock()
	shown := make([]string, len(am.URLs))
	for i, u := range am.URLs {
		shown[i] = alertpush.Redacted(u)
	}
	d.log.Info("pushing alerts to alertmanager", zap.Strings("urls", shown), zap.Duration("resend_every", time.Duration(am.ResendEvery)))
}

// pushCheckEvery is how often the pusher compares the queue with what it
// last offered when the store tells no commits.
const pushCheckEvery = time.Second

// stopPush stops the pusher, if one runs, and waits for it. The alerts
// stay as they are in Alertmanager: they end by their endsAt unless a
// daemon sends them again.
func (d *daemon) stopPush() {
	d.mu.Lock()
	run := d.push
	d.push = nil
	d.mu.Unlock()
	if run != nil {
		run.stop()
	}
}

// reloadPush restarts the pusher when the alertmanager section changed.
func (d *daemon) reloadPush() {
	d.mu.Lock()
	run := d.push
	d.mu.Unlock()
	if run != nil && samePush(run.cfg, d.cfg.Alertmanager) || run == nil && !d.cfg.Alertmanager.Enabled() {
		return
	}
	d.stopPush()
	d.startPush()
	if !d.cfg.Alertmanager.Enabled() {
		d.log.Info("no longer pushing alerts to alertmanager (alertmanager.urls is empty); those sent end by their endsAt")
	}
}

func samePush(a, b config.Alertmanager) bool {
	return slices.Equal(a.URLs, b.URLs) && a.ResendEvery == b.ResendEvery && a.Timeout == b.Timeout && a.RunbookURL == b.RunbookURL
}

// kickPush is the live view's change hook: a changed entity may change
// the queue, which the pusher then looks at at once.
func (d *daemon) kickPush(_, _ *store.Entity) {
	d.mu.Lock()
	run := d.push
	d.mu.Unlock()
	if run != nil {
		run.pusher.Kick()
	}
}
