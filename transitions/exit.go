package transitions

import (
	"syscall"

	"watchdog/state"
)

// ExitOutcome is how a finished process maps onto a lifecycle and exit code.
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

// MapExit maps a process end onto a session lifecycle: a signal someone sent
// is an intended stop (cancelled), and timedOut wins over the child's exit.
func MapExit(code int, sig syscall.Signal, timedOut bool) ExitOutcome {
	switch {
	case timedOut || (sig == 0 && code == ExitTimeout):
		return ExitOutcome{To: "timed_out", Reason: state.RunTimedOutDeadline, ExitCode: ExitTimeout}
	case sig == syscall.SIGINT || (sig == 0 && code == ExitSIGINT):
		return ExitOutcome{To: "cancelled", Reason: state.RunCancelledSigint, ExitCode: ExitSIGINT}
	case sig == syscall.SIGTERM || (sig == 0 && code == ExitSIGTERM):
		return ExitOutcome{To: "cancelled", Reason: state.RunCancelledSigterm, ExitCode: ExitSIGTERM}
	case sig != 0:
		return ExitOutcome{To: "failed", Reason: state.RunFailedSignal, ExitCode: 128 + int(sig)}
	case code == 0:
		return ExitOutcome{To: "completed", Reason: state.RunCompletedExitZero, ExitCode: 0}
	}
	return ExitOutcome{To: "failed", Reason: state.RunFailedExitNonzero, ExitCode: code}
}

// stopCodes are an intended stop's codes, by the type's state and exit code.
var stopCodes = map[string]map[int]state.ReasonCode{
	"cancelled":   {ExitSIGINT: state.RunCancelledSigint, ExitSIGTERM: state.RunCancelledSigterm},
	"stopped":     {ExitSIGINT: state.RunCancelledSigint, ExitSIGTERM: state.RunCancelledSigterm},
	"interrupted": {ExitSIGINT: state.RunInterruptedSigint, ExitSIGTERM: state.RunInterruptedSigterm},
}

// MapExit maps a process end onto this type: an intended stop ends in the
// type's own word, and an untold exit 124 fails a type that NeedsTimeout.
func (g *Graph) MapExit(code int, sig syscall.Signal, timedOut, timeoutKnown bool) ExitOutcome {
	out := MapExit(code, sig, timedOut)
	if out.To == "timed_out" && !timedOut && !timeoutKnown && g.NeedsTimeout {
		out.To, out.Reason = "failed", state.RunFailedExitNonzero
	}
	if out.To == "cancelled" {
		to := g.OnTerminate
		if out.ExitCode == ExitSIGINT {
			to = g.OnInterrupt
		}
		if to != "" {
			out.To, out.Reason = to, stopCodes[to][out.ExitCode]
		}
	}
	return out
}
