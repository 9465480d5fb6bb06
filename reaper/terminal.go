package reaper

import (
	"context"
	"fmt"
	"time"

	"go.uber.org/zap"

	"watchdog/probe"
	"watchdog/state"
)

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
