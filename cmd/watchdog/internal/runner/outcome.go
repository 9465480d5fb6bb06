package runner

import (
	"context"
	"fmt"
	"strings"
	"time"

	"watchdog/internal/unixtime"
	"watchdog/probe"
	"watchdog/state"
	"watchdog/transitions"
	"watchdog/wire"
)

// outcome is the transition that records the child's end: the exit
// mapping, or failed with run.failed.artifact_contract for an unmet
// contract after a successful exit.
func (p plan) outcome(out transitions.ExitOutcome, end childEnd, started time.Time) wire.Transition {
	now := time.Now()
	detail := fmt.Sprintf("exit status %d", end.code)
	if end.signal != 0 {
		detail = "killed by " + signalName(end.signal)
	}
	if end.timedOut {
		detail = fmt.Sprintf("timed out after %s (%s)", end.elapsed.Round(time.Millisecond), detail)
	}
	ev := []state.EvidenceRef{{Kind: state.EvidenceToolResult, ID: fmt.Sprintf("pid %d", p.reg.PID), Detail: detail, FetchedAt: unixtime.Of(now)}}
	// Most telling first (FitReason keeps the first items).
	ev = append(ev, end.stderr.evidence("stderr", now)...)
	ev = append(ev, end.stdout.evidence("stdout", now)...)
	leftClause, leftEvidence := leftoverFates(end.leftovers, end.killLeftovers, now)
	ev = append(ev, leftEvidence...)
	to, code, msg := out.To, out.Reason, detail
	if len(p.specs) > 0 {
		res := probe.CheckArtifacts(context.Background(), p.root, p.specs, started)
		for _, c := range res.Failing() {
			ev = append(ev, c.Evidence(now))
		}
		if res.Stopped != "" {
			ev = append(ev, state.EvidenceRef{Kind: state.EvidenceArtifact, Path: res.Root, Detail: "artifact check stopped: " + res.Stopped, FetchedAt: unixtime.Of(now)})
		}
		if out.To == "completed" && res.Delivery != state.DeliveryPassed {
			to, code = "failed", state.RunFailedArtifactContract
			var probs []string
			for _, c := range res.Failing() {
				probs = append(probs, c.Detail())
			}
			if res.Stopped != "" {
				probs = append(probs, "artifact check stopped: "+res.Stopped)
			}
			msg = fmt.Sprintf("exit status 0 but delivery %s: %s", res.Delivery, strings.Join(probs, "; "))
		}
	}
	if end.code == transitions.ExitTimeout && end.signal == 0 && !end.timedOut && p.reg.TimeoutSeconds == 0 {
		// The child's own timeout (exit 124, as timeout(1)); MapExit decided
		// whether that is timed_out for this type.
		if to == "timed_out" {
			msg = detail + " (the child's own timeout; exec was given no --timeout)"
		} else {
			msg = detail + fmt.Sprintf(" (the timeout convention, but a %s's timed_out needs the configured timeout: give --timeout)", p.typ)
		}
	}
	if leftClause != "" {
		msg += "; " + leftClause
	}
	// Many failing artifacts must not make the end too long to be accepted.
	fit := state.StateReason{Message: msg, Evidence: ev}
	wire.FitReason(&fit)
	msg, ev = fit.Message, fit.Evidence
	// The exit status as its parent saw it, which the daemon's pidfd may not learn.
	exit := &state.ExitStatus{Code: end.code, At: now}
	if end.signal != 0 {
		exit = &state.ExitStatus{Signal: int(end.signal), At: now}
	}
	t := wire.Transition{
		To:         p.graph.Nearest("running", to),
		ExpectFrom: "running",
		Actor:      transitions.ActorExec,
		Reason:     &wire.Reason{Code: string(code), Message: msg, Evidence: ev},
		ExitStatus: exit,
	}
	if to == "timed_out" {
		t.TimeoutSeconds = p.reg.TimeoutSeconds
		t.ElapsedSeconds = end.elapsed.Seconds()
	}
	return t
}
