package transitions

import (
	"syscall"

	"watchdog/state"
)

// ExitOutcome is how a finished process maps onto a lifecycle (ADR-0025):
// the terminal state, the reason code, and the exit code a wrapper should
// itself exit with.
type ExitOutcome struct {
	To       string
	Reason   state.ReasonCode
	ExitCode int
}

// Exit codes with a meaning of their own (UNIX convention).
const (
	ExitTimeout = 124 // GNU timeout
	ExitSIGINT  = 130 // 128 + SIGINT
	ExitSIGTERM = 143 // 128 + SIGTERM
)

// MapExit maps a process end onto a session lifecycle: 0 completed, 124
// timed_out, 130 or death by SIGINT aborted, 143 or death by SIGTERM
// cancelled, anything else failed. sig is the signal that killed the
// process (0 if it exited); timedOut says the wrapper's deadline fired,
// which wins over whatever the child did when it was told to stop.
func MapExit(code int, sig syscall.Signal, timedOut bool) ExitOutcome {
	switch {
	case timedOut || (sig == 0 && code == ExitTimeout):
		return ExitOutcome{To: "timed_out", Reason: state.RunTimedOutDeadline, ExitCode: ExitTimeout}
	case sig == syscall.SIGINT || (sig == 0 && code == ExitSIGINT):
		return ExitOutcome{To: "aborted", Reason: state.RunAbortedSigint, ExitCode: ExitSIGINT}
	case sig == syscall.SIGTERM || (sig == 0 && code == ExitSIGTERM):
		return ExitOutcome{To: "cancelled", Reason: state.RunCancelledSigterm, ExitCode: ExitSIGTERM}
	case sig != 0:
		return ExitOutcome{To: "failed", Reason: state.RunFailedSignal, ExitCode: 128 + int(sig)}
	case code == 0:
		return ExitOutcome{To: "completed", Reason: state.RunCompletedExitZero, ExitCode: 0}
	}
	return ExitOutcome{To: "failed", Reason: state.RunFailedExitNonzero, ExitCode: code}
}

// ExitTarget adapts a session exit mapping to another type's vocabulary,
// for an entity currently in from: invocations succeed rather than
// complete, and where the type has no edge from `from` to aborted or
// cancelled (a workflow is cancelled only from held) the nearest terminal
// it can reach stands in. It returns "" when no terminal fits (the caller
// then leaves the lifecycle alone).
func ExitTarget(g *Graph, from, to string) string {
	candidates := map[string][]string{
		"completed": {"completed", "succeeded", "stopped"},
		"aborted":   {"aborted", "interrupted", "cancelled", "failed"},
		"cancelled": {"cancelled", "interrupted", "failed"},
		"timed_out": {"timed_out", "failed"},
		"failed":    {"failed"},
	}[to]
	for _, c := range candidates {
		if g.IsTerminal(c) && g.Allowed(from, c) {
			return c
		}
	}
	return ""
}
