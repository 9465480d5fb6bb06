package reaper

import (
	"context"
	"os"
	"slices"
	"strconv"
	"syscall"
	"time"

	"go.uber.org/zap"
	sysunix "golang.org/x/sys/unix"

	"watchdog/judge"
	"watchdog/probe"
	"watchdog/store"
)

// killOrphans stops orphaned processes (reaper.kill_orphans): SIGTERM to
// each, then, after one kill_grace, SIGKILL to those still there. Before
// every signal the pid is re-checked to belong to the recorded process
// (same start time): a reused pid is never signalled. A registration can
// name any pid, so the target is also checked against what the reaper may
// ever aim at (mayKill): never pid 1, the daemon or its ancestors, and only
// processes of reaper.kill_users.
func (r *Reaper) killOrphans(ctx context.Context, orphans []store.Entity) {
	if len(orphans) == 0 {
		return
	}
	send := r.Signal
	if send == nil {
		send = func(pid, sig int) error { return sysunix.Kill(pid, syscall.Signal(sig)) }
	}
	self := os.Getpid()
	ancestors := r.Prober.Ancestors(self)
	signal := func(e store.Entity, sig syscall.Signal) bool {
		log := r.log().With(zap.String("entity", e.Type+"/"+e.ID), zap.Int("pid", e.PID))
		obs := r.Prober.CheckPID(judge.PIDSubject(&e))
		if obs.Liveness != probe.Alive || !obs.IdentityVerified() {
			if sig == syscall.SIGTERM {
				log.Info("orphan gone or not verifiable, not signalling", zap.String("liveness", obs.Liveness.String()))
			}
			return false
		}
		if why := r.mayKill(e.PID, self, ancestors); why != "" {
			log.Warn("not signalling orphan: "+why, zap.String("signal", sysunix.SignalName(sig)))
			return false
		}
		if err := send(e.PID, int(sig)); err != nil {
			log.Warn("signal orphan", zap.String("signal", sysunix.SignalName(sig)), zap.Error(err))
			return false
		}
		log.Info("signalled orphan", zap.String("signal", sysunix.SignalName(sig)))
		return true
	}
	var termed []store.Entity
	for _, e := range orphans {
		if signal(e, syscall.SIGTERM) {
			termed = append(termed, e)
		}
	}
	if len(termed) == 0 {
		return
	}
	select {
	case <-ctx.Done():
		return
	case <-time.After(r.Settings.KillGrace):
	}
	for _, e := range termed {
		signal(e, syscall.SIGKILL)
	}
}

// mayKill says why pid must not be signalled, or "" when it may: the
// reaper never aims at pid 1, itself, its ancestors (a supervisor that
// registered the daemon's own parent as work would otherwise have it kill
// its way up), nor at a process whose real or effective owner is not one
// of reaper.kill_users (by default every user but root).
func (r *Reaper) mayKill(pid, self int, ancestors []int) string {
	switch {
	case pid <= 1:
		return "pid " + strconv.Itoa(pid) + " is never signalled"
	case pid == self:
		return "it is the watchdog itself"
	case slices.Contains(ancestors, pid):
		return "it is an ancestor of the watchdog"
	}
	o, err := r.Prober.Owner(pid)
	if err != nil {
		return "its owner cannot be read (" + err.Error() + ")"
	}
	allowed := func(uid int) bool {
		if r.Settings.KillUIDs == nil {
			return uid != 0
		}
		return slices.Contains(r.Settings.KillUIDs, uid)
	}
	if !allowed(o.RealUID) || !allowed(o.EffectiveUID) {
		if r.Settings.KillUIDs == nil {
			return "it runs as root (uid " + strconv.Itoa(o.RealUID) + ", euid " + strconv.Itoa(o.EffectiveUID) + "), and reaper.kill_users is not set"
		}
		return "its owner (uid " + strconv.Itoa(o.RealUID) + ", euid " + strconv.Itoa(o.EffectiveUID) + ") is not in reaper.kill_users"
	}
	return ""
}
