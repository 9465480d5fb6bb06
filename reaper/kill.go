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
	"watchdog/state"
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

// killLeftovers acts on e's leftover finding (reaper.kill_leftovers), as
// judged just now (reasons): once the finding is leftover_grace old, each
// process it names gets SIGTERM, and once kill_grace more has passed, one
// still there gets SIGKILL. It waits for nothing: the sweep after the
// grace sends the one, the sweep after kill_grace more the other. Each
// signal passes kill_orphans' guards first: the process is re-read with
// the start ticks the finding recorded (a pid reused, or never identified,
// is never signalled) and must pass mayKill (never pid 1, the daemon or
// its ancestors; only reaper.kill_users). Each signal, and each refusal,
// is logged with the entity, the pid and its command: the audit of what
// the reaper did to processes, as for kill_orphans.
func (r *Reaper) killLeftovers(e store.Entity, reasons []state.StateReason) {
	i := slices.IndexFunc(reasons, func(x state.StateReason) bool { return x.Code == state.RunHealthLeftoverProcesses })
	if i < 0 || reasons[i].FirstSeen.IsZero() {
		return
	}
	age := r.now().Sub(reasons[i].FirstSeen.Time)
	sig := syscall.SIGTERM
	switch {
	case age < r.Settings.LeftoverGrace:
		return
	case age >= r.Settings.LeftoverGrace+r.Settings.KillGrace:
		sig = syscall.SIGKILL
	}
	send := r.Signal
	if send == nil {
		send = func(pid, sig int) error { return sysunix.Kill(pid, syscall.Signal(sig)) }
	}
	self := os.Getpid()
	ancestors := r.Prober.Ancestors(self)
	for _, ref := range judge.Leftovers(&store.Entity{Reasons: reasons[i : i+1]}) {
		log := r.log().With(zap.String("entity", e.Type+"/"+e.ID), zap.Int("pid", ref.PID), zap.String("signal", sysunix.SignalName(sig)))
		if ref.StartTicks == 0 {
			log.Warn("not signalling leftover: its start was never recorded, so its pid cannot be told from a reuse")
			continue
		}
		p, err := r.Prober.Process(ref.PID, ref.StartTicks)
		if err != nil {
			log.Info("leftover gone or its pid reused, not signalling", zap.Error(err))
			continue
		}
		log = log.With(zap.String("command", p.Comm))
		if why := r.mayKill(ref.PID, self, ancestors); why != "" {
			log.Warn("not signalling leftover: " + why)
			continue
		}
		if err := send(ref.PID, int(sig)); err != nil {
			log.Warn("signal leftover", zap.Error(err))
			continue
		}
		log.Info("signalled leftover (reaper.kill_leftovers)", zap.Duration("finding_age", age))
	}
}
