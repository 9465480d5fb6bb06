package reaper

import (
	"context"
	"os"
	"slices"
	"strconv"
	"sync"
	"syscall"
	"time"

	"go.uber.org/zap"
	sysunix "golang.org/x/sys/unix"

	"watchdog/judge"
	"watchdog/probe"
	"watchdog/state"
	"watchdog/store"
)

// killOrphans sends SIGTERM, then SIGKILL after kill_grace. Before every
// signal the pid is re-checked as the recorded process, mayKill and the proven owner.
func (r *Reaper) killOrphans(ctx context.Context, orphans []store.Entity) {
	if len(orphans) == 0 {
		return
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
		why := r.mayKill(e.PID, self, ancestors)
		if why == "" {
			why = r.notOwners(e.PID, e)
		}
		if why != "" {
			log.Warn("not signalling orphan: "+why, zap.String("signal", sysunix.SignalName(sig)))
			return false
		}
		if err := r.signalProcess(e.PID, e.PIDStartTicks, sig); err != nil {
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

// mayKill says why pid must not be signalled, or "": never pid 1, itself,
// its ancestors, nor a process whose real or effective owner is not in kill_users.
func (r *Reaper) mayKill(pid, self int, ancestors []int) string {
	return mayKill(r.Prober, r.Settings.KillUIDs, pid, self, ancestors)
}

// mayKill is Reaper.mayKill with kill_users given (nil: every user but
// root).
func mayKill(pr Prober, killUIDs []int, pid, self int, ancestors []int) string {
	switch {
	case pid <= 1:
		return "pid " + strconv.Itoa(pid) + " is never signalled"
	case pid == self:
		return "it is the watchdog itself"
	case slices.Contains(ancestors, pid):
		return "it is an ancestor of the watchdog"
	}
	o, err := pr.Owner(pid)
	if err != nil {
		return "its owner cannot be read (" + err.Error() + ")"
	}
	allowed := func(uid int) bool {
		if killUIDs == nil {
			return uid != 0
		}
		return slices.Contains(killUIDs, uid)
	}
	if !allowed(o.RealUID) || !allowed(o.EffectiveUID) {
		if killUIDs == nil {
			return "it runs as root (uid " + strconv.Itoa(o.RealUID) + ", euid " + strconv.Itoa(o.EffectiveUID) + "), and reaper.kill_users is not set"
		}
		return "its owner (uid " + strconv.Itoa(o.RealUID) + ", euid " + strconv.Itoa(o.EffectiveUID) + ") is not in reaper.kill_users"
	}
	return ""
}

// killLeftovers signals only what the daemon itself saw descend from e's
// verified root, re-read with its recorded start ticks, run as e's proven
// owner and passing mayKill; SIGTERM at leftover_grace, SIGKILL kill_grace later.
func (r *Reaper) killLeftovers(e store.Entity, reasons []state.StateReason) {
	i := slices.IndexFunc(reasons, func(x state.StateReason) bool { return x.Code == state.RunHealthLeftoverProcesses })
	if i < 0 || reasons[i].FirstSeen.IsZero() {
		return
	}
	refs := judge.Leftovers(&store.Entity{Reasons: reasons[i : i+1]})
	r.refreshKill()
	if !e.HasOwnerUID {
		r.leftovers.once(e.Type+"/"+e.ID, func() {
			r.log().Warn("not signalling leftovers: the entity's registration proved no uid (a token without uids), so they are reported, never signalled",
				zap.String("entity", e.Type+"/"+e.ID), zap.Int("leftovers", len(refs)))
		})
		return
	}
	termAt := reasons[i].FirstSeen.Time.Add(r.Settings.LeftoverGrace)
	for _, ref := range refs {
		if !r.leftovers.claim(ref) {
			continue // its SIGTERM is sent or scheduled already
		}
		if wait := termAt.Sub(r.now()); wait > 0 {
			r.after(wait, func() { r.termLeftover(e, ref) })
			continue
		}
		r.termLeftover(e, ref)
	}
}

// killSettings are what a leftover's deadlines read of the settings: a
// copy, as the timers run beside the jobs and a reload (SetSettings).
type killSettings struct {
	on    bool
	uids  []int
	grace time.Duration
}

// refreshKill copies the settings the leftover deadlines read; called
// where the settings may be read (a job's step, SetSettings).
func (r *Reaper) refreshKill() {
	r.kill.Store(&killSettings{on: r.Settings.KillLeftovers && !r.Settings.DryRun, uids: r.Settings.KillUIDs, grace: r.Settings.KillGrace})
}

// SetSettings replaces the settings (a reload). It waits for the running
// per-entity step; the caller keeps the scheduled jobs from reading them meanwhile.
func (r *Reaper) SetSettings(s Settings) {
	r.steps.Lock()
	defer r.steps.Unlock()
	r.Settings = s
	r.refreshKill()
}

// termLeftover sends ref its SIGTERM and, if that went, schedules the
// SIGKILL kill_grace later.
func (r *Reaper) termLeftover(e store.Entity, ref judge.LeftoverRef) {
	if !r.signalLeftover(e, ref, syscall.SIGTERM) {
		r.leftovers.release(ref)
		return
	}
	r.after(r.kill.Load().grace, func() {
		r.signalLeftover(e, ref, syscall.SIGKILL)
		r.leftovers.release(ref)
	})
}

// after runs fn after d (Reaper.After, or a timer of its own).
func (r *Reaper) after(d time.Duration, fn func()) {
	if r.After != nil {
		r.After(d, fn)
		return
	}
	time.AfterFunc(d, fn)
}

// signalLeftover sends sig to ref, one of e's leftovers, after its
// guards; it reports whether the signal went.
func (r *Reaper) signalLeftover(e store.Entity, ref judge.LeftoverRef, sig syscall.Signal) bool {
	log := r.log().With(zap.String("entity", e.Type+"/"+e.ID), zap.Int("pid", ref.PID), zap.String("signal", sysunix.SignalName(sig)))
	if ref.StartTicks == 0 {
		log.Warn("not signalling leftover: its start was never recorded, so its pid cannot be told from a reuse")
		return false
	}
	p, err := r.Prober.Process(ref.PID, ref.StartTicks)
	if err != nil {
		log.Info("leftover gone or its pid reused, not signalling", zap.Error(err))
		return false
	}
	log = log.With(zap.String("command", p.Comm))
	ks := r.kill.Load()
	if !ks.on {
		log.Info("not signalling leftover: reaper.kill_leftovers is off now (or dry_run on)")
		return false
	}
	if why := mayKill(r.Prober, ks.uids, ref.PID, os.Getpid(), r.Prober.Ancestors(os.Getpid())); why != "" {
		log.Warn("not signalling leftover: " + why)
		return false
	}
	if why := r.notOwners(ref.PID, e); why != "" {
		log.Warn("not signalling leftover: " + why)
		return false
	}
	if err := r.signalProcess(ref.PID, ref.StartTicks, sig); err != nil {
		log.Warn("signal leftover", zap.Error(err))
		return false
	}
	log.Info("signalled leftover (reaper.kill_leftovers)")
	return true
}

// notOwners says why pid is not e's owner's to have signalled, or "": e's
// registration must have proven a uid, and pid must run as it (real and effective).
func (r *Reaper) notOwners(pid int, e store.Entity) string {
	if !e.HasOwnerUID {
		return "the entity's registration proved no uid (a token without uids): its processes are reported, never signalled"
	}
	o, err := r.Prober.Owner(pid)
	if err != nil {
		return "its owner cannot be read (" + err.Error() + ")"
	}
	if o.RealUID != e.OwnerUID || o.EffectiveUID != e.OwnerUID {
		return "it runs as uid " + strconv.Itoa(o.RealUID) + " (euid " + strconv.Itoa(o.EffectiveUID) + "), not as uid " + strconv.Itoa(e.OwnerUID) + ", who registered the entity"
	}
	return ""
}

// leftoverKills makes each leftover get one SIGTERM and one SIGKILL however
// many sweeps see it.
type leftoverKills struct {
	mu     sync.Mutex
	claims map[judge.LeftoverRef]bool
	logged map[string]bool
}

func (k *leftoverKills) claim(ref judge.LeftoverRef) bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.claims[ref] {
		return false
	}
	if k.claims == nil {
		k.claims = map[judge.LeftoverRef]bool{}
	}
	k.claims[ref] = true
	return true
}

func (k *leftoverKills) release(ref judge.LeftoverRef) {
	k.mu.Lock()
	delete(k.claims, ref)
	k.mu.Unlock()
}

// once runs fn the first time key is seen (bounded: forgotten at 10,000).
func (k *leftoverKills) once(key string, fn func()) {
	k.mu.Lock()
	if k.logged[key] {
		k.mu.Unlock()
		return
	}
	if k.logged == nil || len(k.logged) >= 10000 {
		k.logged = map[string]bool{}
	}
	k.logged[key] = true
	k.mu.Unlock()
	fn()
}
