package reaper

import (
	"context"
	"fmt"
	"slices"
	"time"

	"watchdog/jobs"
	"watchdog/probe"
	"watchdog/state"
	"watchdog/store"
	"watchdog/unixtime"
)

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
	rep := Report{Job: jobs.ReapPhantoms, DryRun: r.Settings.DryRun}
	list, err := r.openOnHost(ctx)
	if err != nil {
		return rep, fmt.Errorf("reap_phantoms: %w", err)
	}
	now := r.now()
	parents := newParentCache(ctx, r.Store)
	// Orphans this run ended are signalled together at its end: one
	// kill_grace for the lot, not one per orphan holding the job.
	var kill []store.Entity
	defer func() { r.killOrphans(ctx, kill) }()
	for _, e := range list {
		rep.Checked++
		if e.HostID == "" && !r.leads() {
			// Checked at each host-less write, not once per fire: a lease
			// that lapsed mid-run hands the rest to the new leader.
			return rep, nil
		}
		act, reason, ok := r.decideReap(ctx, e, parents, now)
		if !ok {
			continue
		}
		if len(rep.Actions) >= r.maxPerRun() {
			rep.Truncated = true
			return rep, nil
		}
		if err := r.apply(ctx, &act, reason, "reconciliation"); err != nil {
			return rep, err
		}
		rep.Actions = append(rep.Actions, act)
		if r.killAfter(act) {
			kill = append(kill, e)
		}
	}
	return rep, nil
}

// ReapPhantomEntity is reap_phantoms' rule for one entity: a process
// entity recorded process_dead or orphaned, re-probed now and quiet for
// phantom_after (a dead one also past terminal_grace), or a team, play or
// show its relatives settle (orchestration.go). The action goes through
// the write path (dry_run honoured); an orphan it ended is signalled when
// reaper.kill_orphans is on, which holds the call for up to kill_grace.
// ok says an action was decided; a.Applied says it was written. An entity
// of another host or already ended is left alone (ok false, nil).
func (r *Reaper) ReapPhantomEntity(ctx context.Context, e store.Entity) (a Action, ok bool, err error) {
	if !r.owns(e) || e.Terminal {
		return Action{}, false, nil
	}
	a, reason, ok := r.decideReap(ctx, e, newParentCache(ctx, r.Store), r.now())
	if !ok {
		return Action{}, false, nil
	}
	if err := r.apply(ctx, &a, reason, "reconciliation"); err != nil {
		return a, true, err
	}
	if r.killAfter(a) {
		r.killOrphans(ctx, []store.Entity{e})
	}
	return a, true, nil
}

// decideReap is reap_phantoms' decision for one open entity of this host:
// its type's reconciliation rule when the graph names one, else the
// phantom rule.
func (r *Reaper) decideReap(ctx context.Context, e store.Entity, parents parentCache, now time.Time) (Action, state.StateReason, bool) {
	if rec := reconciliation(e); rec != nil {
		return reconcilers[rec.Rule](r, ctx, e, rec.To, parents)
	}
	return r.phantom(ctx, e, parents, now)
}

// killAfter says whether an applied reap is an orphan to signal. Only an
// orphan actually ended here is: one whose end lost the race (the owner
// wrote first) is not ours to kill.
func (r *Reaper) killAfter(a Action) bool {
	return a.Reason == state.SystemReaperPhantomOrphaned && r.Settings.KillOrphans && a.Applied
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
	// The moment, not the age: readers render ages (state.Render).
	last := now.Add(-quiet)
	detail := fmt.Sprintf("%s; no activity since %s", res.PID.Detail(), state.Stamp(last))
	ev.Detail = detail
	a := Action{Type: e.Type, ID: e.ID, From: e.LifecycleOr(""), To: to, Reason: code, Detail: detail}
	reason := state.Observed(code, "phantom: the row said "+e.LifecycleOr("")+" but the process says otherwise; no activity since "+state.Stamp(last), ev)
	reason.Since = unixtime.Of(last)
	return a, reason, true
}
