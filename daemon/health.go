package daemon

import (
	"errors"
	"fmt"
	"time"

	"go.uber.org/zap"

	"watchdog/reaper"
)

// statusEvery is how soon after a change STATUS= is refreshed (changes
// within it share one); statusSlow is how often it is without change.
const (
	statusEvery = 5 * time.Second
	statusSlow  = time.Minute
)

// statusSoon asks for a STATUS= refresh within statusEvery.
func (d *daemon) statusSoon() {
	if d.statusOn {
		d.statusAlarm.Earlier(time.Now().Add(statusEvery))
	}
}

// refreshStatus sends STATUS= when the line changed, or always when force
// (after a sweep).
func (d *daemon) refreshStatus(force bool) {
	line := d.statusLine()
	d.mu.Lock()
	changed := line != d.lastStatus
	d.lastStatus = line
	d.mu.Unlock()
	if changed || force {
		d.notify.status(line)
	}
}

// afterSweep runs after every sweep that read the store and probed. The
// first also feeds systemd's watchdog before READY, before the loop runs.
func (d *daemon) afterSweep() {
	d.mu.Lock()
	d.swept = true
	d.mu.Unlock()
	d.feedWatchdog()
	d.refreshStatus(true)
}

// monitorWedgedAfter is how long a monitor step may run before the daemon
// counts as wedged: far past any step's own bounds.
const monitorWedgedAfter = 2 * time.Minute

// sweepWedgedAfter is how long past its budget a sweep may run before it
// counts as stuck (a sweep returns soon after its budget runs out): then
// the pings stop, and a restart is the cure.
const sweepWedgedAfter = time.Minute

// feedWatchdog pings systemd's watchdog when the daemon is healthy by what
// it can check cheaply (unhealthy). It never waits for a sweep: a slow
// reconciler is not a dead daemon (ADR-0015).
func (d *daemon) feedWatchdog() {
	d.askStore(storeAskFresh, storeAskWait)
	if why := d.unhealthy(time.Now()); why != "" {
		d.log.Debug("not feeding systemd's watchdog", zap.String("why", why))
		return
	}
	d.notify.watchdog()
}

// unhealthy says why the daemon should not tell systemd it is alive, or ""
// when it may.
func (d *daemon) unhealthy(now time.Time) string {
	d.mu.Lock()
	storeErr, checked, checking, started := d.storeErr, d.storeChecked, d.checkStart, d.sweepStart
	d.mu.Unlock()
	budget := d.rp.Settings.SweepBudget
	if budget <= 0 {
		budget = reaper.DefaultSettings.SweepBudget
	}
	switch {
	case storeErr != nil:
		return "the store cannot be written: " + oneLine(storeErr.Error())
	case checked.IsZero() || !checking.IsZero() && now.Sub(checking) > storeCheckStale:
		return "the store watch's check has not finished lately"
	case !started.IsZero() && now.Sub(started) > budget+sweepWedgedAfter:
		return fmt.Sprintf("a sweep has run for %s (budget %s)", now.Sub(started).Round(time.Second), budget)
	case d.live != nil && d.live.mon.Stuck(now) > monitorWedgedAfter:
		return fmt.Sprintf("a monitor step has run for %s: every death and deadline waits behind it", d.live.mon.Stuck(now).Round(time.Second))
	}
	return ""
}

// ready is /readyz: a store check passed (ADR-0038), fresh within
// storeAskFresh (ADR-0055), fds enough free, and a recent sweep. It waits
// at most storeAskWait for the check, then answers from the last finding,
// whatever state the disk is in.
func (d *daemon) ready() error {
	d.askStore(storeAskFresh, storeAskWait)
	d.mu.Lock()
	last, gap := d.lastSweep, d.sweepGap
	storeErr, checked, checking, fdErr := d.storeErr, d.storeChecked, d.checkStart, d.fdErr
	d.mu.Unlock()
	switch {
	case storeErr != nil:
		return storeErr
	case fdErr != nil:
		return fdErr
	case checked.IsZero():
		return errors.New("the store has not been checked yet")
	case !checking.IsZero() && time.Since(checking) > storeCheckStale:
		return fmt.Errorf("the store's check has not finished for %s (a hung disk, or another process holding the database's write lock)", time.Since(checking).Round(time.Second))
	}
	limit := max(3*gap, time.Minute)
	if last.IsZero() {
		return errors.New("no sweep has completed yet")
	}
	if age := time.Since(last); age > limit {
		return fmt.Errorf("last sweep %s ago (limit %s)", age.Round(time.Second), limit)
	}
	return nil
}
