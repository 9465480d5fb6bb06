package reaper

import (
	"context"
	"fmt"
	"time"

	"watchdog/judge"
	"watchdog/state"
	"watchdog/store"
)

// ReapPhantoms ends the entities whose row says running but whose process
// says otherwise, the slow safety net behind enforcement, and settles
// orchestration (teams, plays, shows).
func (r *Reaper) ReapPhantoms(ctx context.Context) (Report, error) {
	rep := Report{Job: JobReapPhantoms, DryRun: r.Settings.DryRun}
	// Only the candidates, by index, a page at a time (ADR-0052).
	pages := r.pages(store.Filter{HostID: r.HostID, OpenOnly: true, AlsoHostless: r.leads(),
		PhantomBefore: r.now().Add(-r.Settings.PhantomAfter), Reconciled: reconciled})
	parents := newParentCache(ctx, r.Store)
	// Orphans this run ended are signalled together at its end: one
	// kill_grace for the lot, not one per orphan holding the job.
	var kill []store.Entity
	defer func() { r.killOrphans(ctx, kill) }()
	for {
		list, err := pages.next(ctx)
		if err != nil {
			return rep, fmt.Errorf("reap_phantoms: %w", err)
		}
		if len(list) == 0 {
			return rep, nil
		}
		if done, err := r.reapPage(ctx, &rep, list, parents, &kill); done || err != nil {
			return rep, err
		}
	}
}

// reapPage is ReapPhantoms over one page; done says the run is over (the
// lease lapsed, or the run's bound was reached).
func (r *Reaper) reapPage(ctx context.Context, rep *Report, list []store.Entity, parents parentCache, kill *[]store.Entity) (done bool, err error) {
	for _, e := range list {
		rep.Checked++
		if e.HostID == "" && !r.leads() {
			// Checked at each host-less write, not once per fire: a lease
			// that lapsed mid-run hands the rest to the new leader.
			return true, nil
		}
		a, reason, trigger, ok, err := r.decideReap(ctx, e, parents)
		if err != nil {
			return true, err
		}
		if !ok {
			continue
		}
		if len(rep.Actions) >= r.maxPerRun() {
			rep.Truncated = true
			return true, nil
		}
		if err := r.apply(ctx, &a, reason, trigger); err != nil {
			return true, err
		}
		rep.Actions = append(rep.Actions, a)
		if r.killAfter(a) {
			*kill = append(*kill, e)
		}
	}
	return false, nil
}

// ReapPhantomEntity is reap_phantoms' rule for one entity, through the write
// path; acted says an end was written.
func (r *Reaper) ReapPhantomEntity(ctx context.Context, e store.Entity) (acted bool, err error) {
	r.steps.RLock()
	defer r.steps.RUnlock()
	a, ok, err := r.reapPhantomEntity(ctx, e)
	return ok && a.Applied, err
}

func (r *Reaper) reapPhantomEntity(ctx context.Context, e store.Entity) (a Action, ok bool, err error) {
	if !r.owns(e) || e.Terminal {
		return Action{}, false, nil
	}
	a, reason, trigger, ok, err := r.decideReap(ctx, e, newParentCache(ctx, r.Store))
	if err != nil || !ok {
		return Action{}, false, err
	}
	if err := r.apply(ctx, &a, reason, trigger); err != nil {
		return a, true, err
	}
	if r.killAfter(a) {
		r.killOrphans(ctx, []store.Entity{e})
	}
	return a, true, nil
}

// decideReap is reap_phantoms' decision for one open entity of this host.
func (r *Reaper) decideReap(ctx context.Context, e store.Entity, parents parentCache) (Action, state.StateReason, string, bool, error) {
	if rec := reconciliation(e); rec != nil {
		a, reason, ok := reconcilers[rec.Rule](r, ctx, e, rec, parents)
		return a, reason, "reconciliation", ok, nil
	}
	if !judge.PhantomDue(&e, time.Time{}, r.Settings.Settings, r.now()) {
		return Action{}, state.StateReason{}, "", false, nil
	}
	return r.decide(ctx, e, parents, judge.Event{}, judge.ActPhantom)
}

// killAfter says whether an applied reap is an orphan to signal: one whose
// end lost the race to the owner is not ours to kill.
func (r *Reaper) killAfter(a Action) bool {
	return a.Reason == state.SystemReaperPhantomOrphaned && r.Settings.KillOrphans && a.Applied
}
