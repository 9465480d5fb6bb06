package reaper

import (
	"context"
	"fmt"

	"go.uber.org/zap"

	"watchdog/judge"
	"watchdog/probe"
	"watchdog/state"
	"watchdog/store"
)

// EnforceTerminal ends every open entity seen dead for terminal_grace with
// no end recorded. The compare-and-set makes the owner's write win if it
// lands first, and only a conclusive death now counts.
func (r *Reaper) EnforceTerminal(ctx context.Context) (Report, error) {
	rep := Report{Job: JobEnforceTerminal, DryRun: r.Settings.DryRun}
	// Only entities with a recorded death can be due (judge.EnforceTarget):
	// the store hands over those alone.
	list, err := r.Store.List(ctx, store.Filter{HostID: r.HostID, OpenOnly: true, DeadOnly: true})
	if err != nil {
		return rep, fmt.Errorf("enforce_terminal: %w", err)
	}
	now := r.now()
	for _, e := range list {
		if judge.EnforceTarget(&e) == "" {
			continue
		}
		rep.Checked++
		if !judge.GraceOver(&e, r.Settings.Settings, now) {
			continue
		}
		if len(rep.Actions) >= r.maxPerRun() {
			rep.Truncated = true
			break
		}
		a, ok, err := r.act(ctx, e, newParentCache(ctx, r.Store), judge.Event{}, judge.ActEnforce)
		if err != nil {
			return rep, err
		}
		if ok {
			rep.Actions = append(rep.Actions, a)
		}
	}
	return rep, nil
}

// EnforceEntity is enforce_terminal for one entity, through the write path
// (compare-and-set: an owner's end that lands first wins). A kernel-reported
// death (ev.Died) is not looked for again; acted says an end was written.
func (r *Reaper) EnforceEntity(ctx context.Context, e store.Entity, ev judge.Event) (acted bool, err error) {
	r.steps.RLock()
	defer r.steps.RUnlock()
	a, ok, err := r.enforceEntity(ctx, e, ev)
	return ok && a.Applied, err
}

func (r *Reaper) enforceEntity(ctx context.Context, e store.Entity, ev judge.Event) (a Action, ok bool, err error) {
	if !r.owns(e) || e.Terminal || !judge.GraceOver(&e, r.Settings.Settings, r.now()) {
		return Action{}, false, nil
	}
	if judge.EnforceTarget(&e) == "" {
		// No end for a dead process: record the operator's flag now, not at the next sweep.
		_, err := r.observe(ctx, e, ev)
		return Action{}, false, err
	}
	return r.act(ctx, e, newParentCache(ctx, r.Store), ev, judge.ActEnforce)
}

// act makes the first act of the kinds given through the write path.
func (r *Reaper) act(ctx context.Context, e store.Entity, parents parentCache, ev judge.Event, kinds ...judge.ActKind) (Action, bool, error) {
	a, reason, trigger, ok, err := r.decide(ctx, e, parents, ev, kinds...)
	if err != nil || !ok {
		return Action{}, false, err
	}
	if err := r.apply(ctx, &a, reason, trigger); err != nil {
		return a, true, err
	}
	return a, true, nil
}

// decide sees and judges e; ok false when no act of the kinds given is called for.
func (r *Reaper) decide(ctx context.Context, e store.Entity, parents parentCache, ev judge.Event, kinds ...judge.ActKind) (Action, state.StateReason, string, bool, error) {
	var s step
	var err error
	if ev.Died && e.HostID == r.HostID && len(kinds) == 1 && kinds[0] == judge.ActEnforce {
		// Enforcement needs the death alone, which the kernel told.
		sub := judge.PIDSubject(&e)
		if sub.Exit == nil {
			sub.Exit = ev.Exit // heard, not stored yet: the evidence names it
		}
		pid := probe.Reported(sub)
		s.seen = judge.Seen{Probed: true, Event: ev, Observed: probe.Observations{PID: pid}}
		s.v = judge.Judge(e, s.seen, r.Settings.Settings, r.now())
	} else {
		s, err = r.judgeOne(ctx, e, parents.terminal(e), false, ev)
	}
	if err != nil {
		return Action{}, state.StateReason{}, "", false, err
	}
	j, ok := s.v.First(kinds...)
	if !ok {
		if l := s.seen.Observed.PID.Liveness; s.seen.Probed && l != probe.Dead && judge.EnforceTarget(&e) != "" {
			r.log().Info("death not confirmed, not acting", zap.String("entity", e.Type+"/"+e.ID), zap.String("liveness", l.String()))
		}
		return Action{}, state.StateReason{}, "", false, nil
	}
	a := Action{Type: e.Type, ID: e.ID, From: j.From, To: j.To, Reason: j.Reason.Code, Detail: j.Detail}
	return a, j.Reason, j.Trigger, true, nil
}
