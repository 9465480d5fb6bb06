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
// says otherwise (PLEG's "non-existent" case, the slow safety net behind
// enforcement): open, health process_dead or orphaned, no activity for
// phantom_after. It also closes teams whose parent ended, blocks plays
// whose dependency failed or does not exist, and fails shows whose
// critical-path play failed.
func (r *Reaper) ReapPhantoms(ctx context.Context) (Report, error) {
	rep := Report{Job: JobReapPhantoms, DryRun: r.Settings.DryRun}
	// Only the candidates, by index (PhantomBefore: PhantomDue by the row,
	// and the reconciled types), a page at a time as the sweep reads
	// (ADR-0052): a page read after this run's own writes sees them, as a
	// later run would.
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

// ReapPhantomEntity is reap_phantoms' rule for one entity: a process
// entity recorded process_dead or orphaned, seen again now and quiet for
// phantom_after (a dead one also past terminal_grace), or a team, play or
// show its relatives settle (orchestration.go). The action goes through
// the write path (dry_run honoured); an orphan it ended is signalled when
// reaper.kill_orphans is on, which holds the call for up to kill_grace.
// ok says an action was decided; a.Applied says it was written. An entity
// of another host or already ended is left alone; acted says an end was
// written.
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

// decideReap is reap_phantoms' decision for one open entity of this
// host: its type's reconciliation rule when the graph names one, else the
// judgement's phantom act, seen again now (and only once its row says
// phantom_after has come: judge.PhantomDue).
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

// killAfter says whether an applied reap is an orphan to signal. Only an
// orphan actually ended here is: one whose end lost the race (the owner
// wrote first) is not ours to kill.
func (r *Reaper) killAfter(a Action) bool {
	return a.Reason == state.SystemReaperPhantomOrphaned && r.Settings.KillOrphans && a.Applied
}
