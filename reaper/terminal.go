package reaper

import (
	"context"
	"fmt"
	"time"

	"go.uber.org/zap"

	"watchdog/jobs"
	"watchdog/probe"
	"watchdog/state"
	"watchdog/store"
	"watchdog/unixtime"
)

// EnforceTerminal ends every open entity whose process has been seen dead
// for at least terminal_grace and that still has not recorded its own end:
// the type's dead-process terminal with system.health.process_dead_no_terminal
// and the pid evidence. The grace gives the owner time to record its own
// end; the compare-and-set makes the owner's write win if it lands first.
// Right before writing, the process is checked once more, and only a
// conclusive death counts: the sweep's finding may be old.
func (r *Reaper) EnforceTerminal(ctx context.Context) (Report, error) {
	rep := Report{Job: jobs.EnforceTerminal, DryRun: r.Settings.DryRun}
	// Only entities with a recorded death can be due (enforceTarget): the
	// store hands over those alone.
	list, err := r.Store.List(ctx, store.Filter{HostID: r.HostID, OpenOnly: true, DeadOnly: true})
	if err != nil {
		return rep, fmt.Errorf("enforce_terminal: %w", err)
	}
	now := r.now()
	for _, e := range list {
		if enforceTarget(e) == "" {
			continue
		}
		rep.Checked++
		if !r.graceOver(e, now) {
			continue
		}
		if len(rep.Actions) >= r.maxPerRun() {
			rep.Truncated = true
			break
		}
		a, ok, err := r.enforce(ctx, e, now)
		if err != nil {
			return rep, err
		}
		if ok {
			rep.Actions = append(rep.Actions, a)
		}
	}
	return rep, nil
}

// EnforceEntity is enforce_terminal for one entity: recorded dead for at
// least terminal_grace and not ended → re-probe the pid, and only on a
// conclusive death end it in the type's dead-process terminal through the
// write path (compare-and-set: an owner's own end that lands first wins).
// dry_run is honoured (the action comes back skipped). ok says an action
// was decided; a.Applied says it was written. An entity of another host,
// one not recorded dead, within its grace, or whose death is not
// confirmed now is left alone (ok false, nil).
func (r *Reaper) EnforceEntity(ctx context.Context, e store.Entity) (a Action, ok bool, err error) {
	now := r.now()
	if !r.owns(e) || e.Terminal || e.DeadSince.IsZero() || !r.graceOver(e, now) {
		return Action{}, false, nil
	}
	if enforceTarget(e) == "" {
		// No end for a dead process (a play, a show, a team, a schedule):
		// its fate is the flag for the operator, which the check records
		// (unownedDeath) now that the grace is over, not at the next sweep.
		var err error
		if e.Type == "schedule" {
			_, err = r.CheckScheduleEntity(ctx, e)
		} else {
			_, err = r.CheckEntity(ctx, e)
		}
		return Action{}, false, err
	}
	return r.enforce(ctx, e, now)
}

// graceOver says whether e, recorded dead, has used up terminal_grace.
func (r *Reaper) graceOver(e store.Entity, now time.Time) bool {
	return now.Sub(e.DeadSince) >= r.Settings.TerminalGrace
}

// enforce is the one decision of enforcement for an entity past its grace:
// confirm the death now, then end it.
func (r *Reaper) enforce(ctx context.Context, e store.Entity, now time.Time) (Action, bool, error) {
	pid := r.Prober.CheckPID(pidTarget(e))
	if pid.Liveness != probe.Dead {
		r.log().Info("death not confirmed, not enforcing", zap.String("entity", e.Type+"/"+e.ID), zap.String("liveness", pid.Liveness.String()))
		return Action{}, false, nil
	}
	ev := pid.Evidence(now)
	// A stored message carries the moment, never an age: readers render
	// the age when they show it (state.Render).
	since := state.Stamp(e.DeadSince)
	detail := fmt.Sprintf("%s; dead since %s", pid.Detail(), since)
	ev.Detail = detail
	a := Action{Type: e.Type, ID: e.ID, From: e.LifecycleOr(""), To: enforceTarget(e), Reason: state.SystemHealthProcessDeadNoTerminal, Detail: detail}
	reason := state.Observed(state.SystemHealthProcessDeadNoTerminal, "process died without recording a terminal state; dead since "+since, ev)
	reason.Since = unixtime.Of(e.DeadSince)
	if err := r.apply(ctx, &a, reason, "process_exited"); err != nil {
		return a, true, err
	}
	return a, true, nil
}
