package daemon

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"go.uber.org/zap"

	"watchdog/internal/deadline"
	"watchdog/store"
)

// paused says whether the daemon's background writes (jobs, presence) are
// paused: the store is lost (the daemon stays up on purpose: it holds the
// lost file open for the rescue), or the disk is short of space (every
// byte an operator frees stays free; ADR-0036).
func (d *daemon) paused() bool {
	if d.st != nil && d.st.Lost() {
		return true
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	return errors.Is(d.storeErr, store.ErrShortOfSpace)
}

// The store watch (ADR-0038, ADR-0055): cheap checks that write nothing,
// run when asked (/readyz, systemd's ping), on the store's health events,
// and on one alarm (each storeCheckEvery while not ready, else
// storeCheckSlow or when a write probe is due). A write probe runs only
// when not ready, after a failed write, or when idle for storeProbeIdle.
var (
	storeCheckEvery   = time.Second
	storeCheckSlow    = time.Minute
	storeAskFresh     = 250 * time.Millisecond
	storeAskWait      = 500 * time.Millisecond
	storeProbeTimeout = 1500 * time.Millisecond
	storeCheckStale   = 3 * time.Second
	storeProbeIdle    = 5 * time.Minute
)

// runStoreWatch checks the store once, then keeps watching it until stop.
func (d *daemon) runStoreWatch(ctx context.Context) (stop func()) {
	watchCtx, stopWatch := context.WithCancel(context.WithoutCancel(ctx))
	d.watchCtx = watchCtx
	d.storeAlarm = deadline.Shared().Signal()
	d.checkStore(ctx)
	var watching sync.WaitGroup
	watching.Go(func() { d.watchStore(watchCtx) })
	return func() {
		stopWatch()
		d.storeAlarm.Stop()
		watching.Wait()
	}
}

func (d *daemon) watchStore(ctx context.Context) {
	events := d.st.HealthEvents()
	for {
		select {
		case <-ctx.Done():
			return
		case <-events:
		case <-d.storeAlarm.C:
		}
		<-d.startCheck()
	}
}

// askStore makes sure a store check finished within fresh, waiting at most
// wait.
func (d *daemon) askStore(fresh, wait time.Duration) {
	if d.st == nil || d.storeAlarm == nil {
		return
	}
	d.mu.Lock()
	recent := !d.storeChecked.IsZero() && time.Since(d.storeChecked) < fresh
	d.mu.Unlock()
	if recent {
		return
	}
	done := d.startCheck()
	a := deadline.Shared().Signal()
	a.Set(wait)
	defer a.Stop()
	select {
	case <-done:
	case <-a.C:
	}
}

// startCheck starts a store check, or joins the running one.
func (d *daemon) startCheck() (done <-chan struct{}) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.checking != nil {
		return d.checking
	}
	ch := make(chan struct{})
	d.checking, d.checkStart = ch, time.Now()
	go func() {
		d.checkStore(d.watchCtx)
		d.mu.Lock()
		d.checking, d.checkStart = nil, time.Time{}
		d.mu.Unlock()
		close(ch)
	}()
	return ch
}

// scheduleCheck sets the store watch's alarm after a check that found err.
func (d *daemon) scheduleCheck(err error) {
	if d.storeAlarm == nil {
		return
	}
	if err != nil {
		d.storeAlarm.Set(storeCheckEvery)
		return
	}
	next := time.Now().Add(storeCheckSlow)
	if w := d.st.WriteHealth(); !w.LastOK.IsZero() {
		if due := w.LastOK.Add(storeProbeIdle + time.Second); due.Before(next) {
			next = due
		}
	}
	d.storeAlarm.SetAt(next)
}

// assessStore says whether the store takes writes, writing a probe only
// when the cheap checks and the real writes cannot tell.
func (d *daemon) assessStore(ctx context.Context, notReady bool) error {
	cctx, cancel := context.WithTimeout(ctx, storeProbeTimeout)
	defer cancel()
	if err := d.st.Check(cctx); err != nil {
		return err
	}
	w, now := d.st.WriteHealth(), time.Now()
	switch {
	case !w.Stalled.IsZero() && now.Sub(w.Stalled) > storeCheckStale:
		return fmt.Errorf("a write to the store has not finished for %s (a hung disk, or another process holding the database's write lock)",
			now.Sub(w.Stalled).Round(time.Second))
	case notReady || w.Failed != nil || now.Sub(w.LastOK) > storeProbeIdle:
		return d.st.CheckWrite(cctx)
	}
	return nil
}

// checkStore assesses the store once for /readyz and STATUS=, logging
// changes only.
func (d *daemon) checkStore(ctx context.Context) {
	d.mu.Lock()
	prevErr := d.storeErr
	notReady := prevErr != nil || d.storeChecked.IsZero()
	d.mu.Unlock()
	err := d.assessStore(ctx, notReady)
	if ctx.Err() != nil {
		return // shutting down: not the store's fault
	}
	d.status.storeChecked(err, time.Now())
	fdErr := checkHeadroom(fdHeadroom)
	d.scheduleCheck(errors.Join(err, fdErr))
	if (err == nil) != (prevErr == nil) {
		d.statusSoon()
	}
	d.mu.Lock()
	prev, prevFD := d.storeErr, d.fdErr
	d.storeErr, d.storeChecked, d.fdErr = err, time.Now(), fdErr
	reportLoss := d.st.Lost() && !d.lostLogged
	if reportLoss {
		d.lostLogged = true
	}
	d.mu.Unlock()
	switch {
	case fdErr != nil && prevFD == nil:
		d.log.Error("not ready: the store cannot open its files", zap.Error(fdErr))
	case fdErr == nil && prevFD != nil:
		d.log.Info("file descriptors free again: ready as far as they go", zap.NamedError("was", prevFD))
	}
	switch {
	case reportLoss:
		d.reportLost(ctx, err)
	case err != nil && prev == nil && !d.st.Lost() && errors.Is(err, store.ErrShortOfSpace):
		d.log.Error("store cannot take writes: the disk is short of space; not ready, writes answered 503, and the daemon's own background writes (jobs, presence) are paused until the reserve is free again; watchdog recovers by itself",
			zap.String("db", d.st.Path()), zap.Error(err))
	case err != nil && prev == nil && !d.st.Lost():
		d.log.Error("store cannot take writes: not ready, writes answered 503; watchdog recovers by itself once the cause clears",
			zap.String("db", d.st.Path()), zap.Error(err))
	case err == nil && prev != nil:
		d.log.Info("store takes writes again", zap.String("db", d.st.Path()), zap.NamedError("was", prev),
			zap.Int64("background_runs_skipped", d.skipped.Swap(0)))
	}
}

// lostMessage is the one log line of a lost store.
const lostMessage = "store lost: its database file was deleted or replaced while watchdog ran; writes are refused until a restart"

const rescueTimeout = 5 * time.Minute

// reportLost rescues the lost store's data and logs what to do.
func (d *daemon) reportLost(ctx context.Context, lost error) {
	db := d.st.Path()
	rctx, cancel := context.WithTimeout(ctx, rescueTimeout)
	defer cancel()
	copyPath, rerr := "", error(errors.New("this store keeps no copy"))
	if r, ok := d.st.(store.Rescuer); ok {
		db = r.File()
		copyPath, rerr = r.Rescue(rctx, time.Now())
	}
	var todo string
	if rerr == nil {
		todo = fmt.Sprintf("writes are refused (503) and /readyz is 503 until watchdog restarts. "+
			"The data as this daemon last saw it was copied to %s. To keep it: stop watchdog, move that copy to %s (replacing what is there, and removing any %s-wal and %s-shm), start watchdog. "+
			"To use the file now at %s instead, restart watchdog; a restart with no file there starts an empty store", copyPath, db, db, db, db)
	} else {
		todo = fmt.Sprintf("writes are refused (503) and /readyz is 503 until watchdog restarts. No copy could be saved (%s). "+
			"Before stopping watchdog, copy the deleted files back from its open descriptors (ls -l /proc/%d/fd | grep %s), or restore %s from a backup; then restart watchdog",
			oneLine(rerr.Error()), os.Getpid(), filepath.Base(db), db)
	}
	d.log.Error(lostMessage, zap.String("db", db), zap.String("error", oneLine(lost.Error())),
		zap.String("rescued_to", copyPath), zap.String("what_to_do", todo))
}
