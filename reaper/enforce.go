package reaper

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"sort"
	"strconv"
	"syscall"
	"time"

	"go.uber.org/zap"
	sysunix "golang.org/x/sys/unix"

	"watchdog/probe"
	"watchdog/state"
	"watchdog/store"
	"watchdog/transitions"
)

func (r *Reaper) maxPerRun() int {
	if r.Settings.MaxPerRun > 0 {
		return r.Settings.MaxPerRun
	}
	return DefaultSettings.MaxPerRun
}

func (r *Reaper) openOnHost(ctx context.Context) ([]store.Entity, error) {
	return r.Store.List(ctx, store.Filter{HostID: r.HostID, OpenOnly: true})
}

// EnforceTerminal ends every open entity whose process has been seen dead
// for at least terminal_grace and that still has not recorded its own end:
// the type's dead-process terminal with system.health.process_dead_no_terminal
// and the pid evidence. The grace gives the owner time to record its own
// end; the compare-and-set makes the owner's write win if it lands first.
// Right before writing, the process is checked once more, and only a
// conclusive death counts: the sweep's finding may be old.
func (r *Reaper) EnforceTerminal(ctx context.Context) (Report, error) {
	rep := Report{Job: JobEnforceTerminal, DryRun: r.Settings.DryRun}
	list, err := r.openOnHost(ctx)
	if err != nil {
		return rep, fmt.Errorf("enforce_terminal: %w", err)
	}
	grace := r.Settings.TerminalGrace
	now := r.now()
	for _, e := range list {
		to := enforceTarget(e)
		if to == "" {
			continue
		}
		rep.Checked++
		if now.Sub(e.DeadSince) < grace {
			continue
		}
		if len(rep.Actions) >= r.maxPerRun() {
			rep.Truncated = true
			break
		}
		pid := r.Prober.CheckPID(pidTarget(e))
		if pid.Liveness != probe.Dead {
			r.log().Info("death not confirmed, not enforcing", zap.String("entity", e.Type+"/"+e.ID), zap.String("liveness", pid.Liveness.String()))
			continue
		}
		ev := pid.Evidence(now)
		detail := fmt.Sprintf("%s; first seen dead %s ago", pid.Detail(), now.Sub(e.DeadSince).Round(time.Second))
		ev.Detail = detail
		a := Action{Type: e.Type, ID: e.ID, From: e.LifecycleOr(""), To: to, Reason: state.SystemHealthProcessDeadNoTerminal, Detail: detail}
		reason := state.Observed(state.SystemHealthProcessDeadNoTerminal, "process died without recording a terminal state", ev)
		if err := r.apply(ctx, &a, reason, "process_exited"); err != nil {
			return rep, err
		}
		rep.Actions = append(rep.Actions, a)
	}
	return rep, nil
}

// lastActivity is the latest sign of life an entity's row holds: a
// lifecycle change, a posted heartbeat, its start or registration. A
// heartbeat file's mtime is read by the probe (see phantom).
func lastActivity(e store.Entity) time.Time {
	return slices.MaxFunc([]time.Time{e.LifecycleAt, e.HeartbeatAt, e.StartedAt, e.CreatedAt}, time.Time.Compare)
}

// ReapPhantoms ends the entities whose row says running but whose process
// says otherwise (PLEG's "non-existent" case, the slow safety net behind
// enforcement): open, health process_dead or orphaned, no activity for
// phantom_after. It also closes teams whose parent ended, blocks plays
// whose dependency failed or does not exist, and fails shows whose
// critical-path play failed.
func (r *Reaper) ReapPhantoms(ctx context.Context) (Report, error) {
	rep := Report{Job: JobReapPhantoms, DryRun: r.Settings.DryRun}
	list, err := r.openOnHost(ctx)
	if err != nil {
		return rep, fmt.Errorf("reap_phantoms: %w", err)
	}
	now := r.now()
	parents := parentCache{store: r.Store, ctx: ctx, seen: map[string]bool{}}
	// Orphans this run ended are signalled together at its end: one
	// kill_grace for the lot, not one per orphan holding the job.
	var kill []store.Entity
	defer func() { r.killOrphans(ctx, kill) }()
	add := func(a Action, reason state.StateReason, trigger string) (bool, error) {
		if len(rep.Actions) >= r.maxPerRun() {
			rep.Truncated = true
			return false, nil
		}
		if err := r.apply(ctx, &a, reason, trigger); err != nil {
			return false, err
		}
		rep.Actions = append(rep.Actions, a)
		return true, nil
	}
	for _, e := range list {
		rep.Checked++
		var (
			act    Action
			reason state.StateReason
			ok     bool
		)
		if rec := reconciliation(e); rec != nil {
			act, reason, ok = reconcilers[rec.Rule](r, ctx, e, rec.To, parents)
		} else {
			act, reason, ok = r.phantom(ctx, e, parents, now)
		}
		if !ok {
			continue
		}
		if cont, err := add(act, reason, "reconciliation"); err != nil || !cont {
			return rep, err
		}
		// Only an orphan this run actually ended is signalled: one whose
		// end lost the race (the owner wrote first) is not ours to kill.
		done := rep.Actions[len(rep.Actions)-1]
		if done.Reason == state.SystemReaperPhantomOrphaned && r.Settings.KillOrphans && done.Applied {
			kill = append(kill, e)
		}
	}
	return rep, nil
}

// reconciler settles one entity by what its relatives say, moving it to to.
type reconciler func(r *Reaper, ctx context.Context, e store.Entity, to string, parents parentCache) (Action, state.StateReason, bool)

// reconcilers implements each rule a graph may name in its Reconcile.
var reconcilers = map[string]reconciler{
	transitions.ReconcileParentEnded:  (*Reaper).orphanedTeam,
	transitions.ReconcileDependency:   (*Reaper).blockedPlay,
	transitions.ReconcileCriticalPath: (*Reaper).failedShow,
}

// reconciliation is the graph's Reconcile rule for e's type, or nil.
func reconciliation(e store.Entity) *transitions.Reconciliation {
	g, err := transitions.Lookup(e.Type)
	if err != nil {
		return nil
	}
	return g.Reconcile
}

// phantom decides on a process entity: health process_dead or orphaned
// (re-checked now) and quiet for phantom_after.
func (r *Reaper) phantom(ctx context.Context, e store.Entity, parents parentCache, now time.Time) (Action, state.StateReason, bool) {
	to := deadTargetFrom(e)
	if to == "" || (e.Health != state.HealthProcessDead && e.Health != state.HealthOrphaned) {
		return Action{}, state.StateReason{}, false
	}
	quiet := now.Sub(lastActivity(e))
	if quiet < r.Settings.PhantomAfter {
		return Action{}, state.StateReason{}, false
	}
	res := r.Prober.Probe(ctx, target(e, parents.terminal(e)), r.Settings.Probe, now)
	// A heartbeat file is activity too, and only the probe reads it: an
	// orphan that still writes its heartbeat is working, not a phantom.
	if hb := res.Heartbeat; hb.Source == probe.HeartbeatFile && !hb.At.IsZero() {
		if q := now.Sub(hb.At); q < quiet {
			quiet = q
		}
		if quiet < r.Settings.PhantomAfter {
			return Action{}, state.StateReason{}, false
		}
	}
	var code state.ReasonCode
	switch {
	case res.Liveness == probe.Dead:
		// "No activity" counts from registration or the last heartbeat,
		// not from the death: a long-quiet entity whose process has just
		// died would otherwise be reaped at once, taking from its owner
		// the terminal_grace in which its own end must win (the serve
		// end-to-end test caught a session aborted one sweep after its
		// death). The grace counts from the first death seen, as in
		// EnforceTerminal.
		if e.DeadSince.IsZero() || now.Sub(e.DeadSince) < r.Settings.TerminalGrace {
			return Action{}, state.StateReason{}, false
		}
		code = state.SystemReaperPhantomProcessDead
	case res.Health == state.HealthOrphaned:
		code = state.SystemReaperPhantomOrphaned
	default:
		// Alive and no longer orphaned, or unknown: never reaped.
		return Action{}, state.StateReason{}, false
	}
	ev := res.PID.Evidence(now)
	detail := fmt.Sprintf("%s; no activity for %s", res.PID.Detail(), quiet.Round(time.Second))
	ev.Detail = detail
	a := Action{Type: e.Type, ID: e.ID, From: e.LifecycleOr(""), To: to, Reason: code, Detail: detail}
	return a, state.Observed(code, "phantom: the row said "+e.LifecycleOr("")+" but the process says otherwise", ev), true
}

// orphanedTeam closes a team whose parent show or play has ended.
func (r *Reaper) orphanedTeam(_ context.Context, e store.Entity, to string, parents parentCache) (Action, state.StateReason, bool) {
	if e.ParentID == "" || (e.ParentType != "show" && e.ParentType != "play") || !parents.terminal(e) {
		return Action{}, state.StateReason{}, false
	}
	detail := fmt.Sprintf("parent %s/%s has ended", e.ParentType, e.ParentID)
	a := Action{Type: e.Type, ID: e.ID, From: e.LifecycleOr(""), To: to, Reason: state.TeamHealthOrphaned, Detail: detail}
	return a, state.Observed(state.TeamHealthOrphaned, detail, state.EvidenceRef{Kind: state.EvidenceToolResult, ID: e.ParentType + "/" + e.ParentID, Detail: detail}), true
}

// blockedPlay blocks a play (not yet running past its queue) one of whose
// depends_on plays failed or does not exist.
func (r *Reaper) blockedPlay(ctx context.Context, e store.Entity, to string, _ parentCache) (Action, state.StateReason, bool) {
	from := e.LifecycleOr("")
	if len(e.DependsOn) == 0 || (from != "planned" && from != "queued") {
		return Action{}, state.StateReason{}, false
	}
	deps := append([]string(nil), e.DependsOn...)
	sort.Strings(deps)
	for _, dep := range deps {
		d, err := r.Store.Get(ctx, "play", dep)
		var code state.ReasonCode
		var detail string
		switch {
		case err != nil:
			code, detail = state.PlayBlockedDependencyInvalid, fmt.Sprintf("dependency play/%s does not exist", dep)
		case d.LifecycleOr("") == "failed":
			code, detail = state.PlayBlockedDependencyFailed, fmt.Sprintf("dependency play/%s failed", dep)
		default:
			continue
		}
		a := Action{Type: e.Type, ID: e.ID, From: from, To: to, Reason: code, Detail: detail}
		return a, state.Observed(code, detail, state.EvidenceRef{Kind: state.EvidenceToolResult, ID: "play/" + dep, Detail: detail}), true
	}
	return Action{}, state.StateReason{}, false
}

// failedShow fails an active show one of whose critical-path plays failed.
// A play is on its show's critical path when it names the show as parent
// and its metadata says "critical_path": true.
func (r *Reaper) failedShow(ctx context.Context, e store.Entity, to string, _ parentCache) (Action, state.StateReason, bool) {
	if e.LifecycleOr("") != "active" {
		return Action{}, state.StateReason{}, false
	}
	// A show's plays may run on other hosts: they are read here, not
	// probed, and only the show (of this host) is written.
	plays, err := r.Store.List(ctx, store.Filter{Type: "play", ParentType: "show", ParentID: e.ID})
	if err != nil {
		r.log().Warn("list plays of show", zap.String("show", e.ID), zap.Error(err))
		return Action{}, state.StateReason{}, false
	}
	for _, p := range plays {
		if p.LifecycleOr("") != "failed" || !criticalPath(p) {
			continue
		}
		detail := fmt.Sprintf("critical-path play/%s failed", p.ID)
		a := Action{Type: e.Type, ID: e.ID, From: "active", To: to, Reason: state.ShowFailedCriticalPathBlocked, Detail: detail}
		return a, state.Observed(state.ShowFailedCriticalPathBlocked, detail, state.EvidenceRef{Kind: state.EvidenceToolResult, ID: "play/" + p.ID, Detail: detail}), true
	}
	return Action{}, state.StateReason{}, false
}

func criticalPath(e store.Entity) bool {
	var m struct {
		CriticalPath bool `json:"critical_path"`
	}
	return len(e.Metadata) > 0 && json.Unmarshal(e.Metadata, &m) == nil && m.CriticalPath
}

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
		obs := r.Prober.CheckPID(pidTarget(e))
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
