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

// pushing is the running Alertmanager pusher and the config it was made
// from.
type pushing struct {
	cfg    config.Alertmanager
	pusher *alertpush.Pusher
	stop   func()
}

// startPush starts pushing to the configured Alertmanagers in a goroutine
// of its own, once the view has loaded: an empty view would resolve every
// alert of this host, then fire them all again.
func (d *daemon) startPush() {
	am := d.cfg.Alertmanager
	if !am.Enabled() {
		return
	}
	pcfg := alertpush.Config{
		URLs: am.URLs, ResendEvery: time.Duration(am.ResendEvery), Timeout: time.Duration(am.Timeout),
		RunbookURL: am.RunbookURL, Host: d.rp.HostID,
		// Each fleet daemon pushes what it owns: one alert per item.
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
			// A commit may change the queue without an entity change (a snooze).
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

// pushCheckEvery is the pusher's poll when the store tells no commits.
const pushCheckEvery = time.Second

// stopPush stops the pusher and waits for it; its alerts in Alertmanager
// end by their endsAt.
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

// kickPush is the view's change hook: the pusher looks at the queue now.
func (d *daemon) kickPush(_, _ *store.Entity) {
	d.mu.Lock()
	run := d.push
	d.mu.Unlock()
	if run != nil {
		run.pusher.Kick()
	}
}
