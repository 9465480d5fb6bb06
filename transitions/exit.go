package transitions

import (
	"syscall"

	"watchdog/state"
)

// ExitOutcome is how a finished process maps onto a lifecycle (the Session Status
// Vocabulary design, amended by issue 14: a signal someone sent is an intended stop):
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
// timed_out, 130 or death by SIGINT and 143 or death by SIGTERM cancelled
// (a stop someone intended, not a failure), anything else failed. sig is
// the signal that killed the process (0 if it exited); timedOut says the
// wrapper's deadline fired, which wins over whatever the child did when it
// was told to stop. run.aborted.sigint stays registered for the rows and
// orchestrators that use it; exec no longer records it.
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

// stopCodes are the reason codes of an intended stop, by the state the
// type records it in and the signal's exit code.
var stopCodes = map[string]map[int]state.ReasonCode{
	"cancelled":   {ExitSIGINT: state.RunCancelledSigint, ExitSIGTERM: state.RunCancelledSigterm},
	"stopped":     {ExitSIGINT: state.RunCancelledSigint, ExitSIGTERM: state.RunCancelledSigterm},
	"interrupted": {ExitSIGINT: state.RunInterruptedSigint, ExitSIGTERM: state.RunInterruptedSigterm},
}

// MapExit maps a process end onto this type: the session mapping of the
// package's MapExit, except that a SIGINT or SIGTERM ends the type in its
// own word for an intended stop (OnInterrupt, OnTerminate: cancelled,
// interrupted or stopped), and that a timeout the watchdog cannot back
// with a configured one (the child's own exit 124; timeoutKnown false)
// ends a type that NeedsTimeout failed with run.failed.exit_nonzero. To
// is otherwise in the session vocabulary (a caller may still judge a
// "completed"); Nearest adapts it to the type. ExitCode is what the
// wrapper exits with either way.
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
