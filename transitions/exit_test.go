package transitions

import (
	"syscall"
	"testing"

	"watchdog/state"
)

func TestMapExit(t *testing.T) {
	tests := []struct {
		name     string
		code     int
		sig      syscall.Signal
		timedOut bool
		want     ExitOutcome
	}{
		{"zero", 0, 0, false, ExitOutcome{"completed", state.RunCompletedExitZero, 0}},
		{"124", 124, 0, false, ExitOutcome{"timed_out", state.RunTimedOutDeadline, 124}},
		{"130", 130, 0, false, ExitOutcome{"cancelled", state.RunCancelledSigint, 130}},
		{"143", 143, 0, false, ExitOutcome{"cancelled", state.RunCancelledSigterm, 143}},
		{"1", 1, 0, false, ExitOutcome{"failed", state.RunFailedExitNonzero, 1}},
		{"2", 2, 0, false, ExitOutcome{"failed", state.RunFailedExitNonzero, 2}},
		{"killed by SIGINT", -1, syscall.SIGINT, false, ExitOutcome{"cancelled", state.RunCancelledSigint, 130}},
		{"killed by SIGTERM", -1, syscall.SIGTERM, false, ExitOutcome{"cancelled", state.RunCancelledSigterm, 143}},
		{"killed by SIGKILL", -1, syscall.SIGKILL, false, ExitOutcome{"failed", state.RunFailedSignal, 137}},
		{"killed by SIGSEGV", -1, syscall.SIGSEGV, false, ExitOutcome{"failed", state.RunFailedSignal, 139}},
		{"deadline wins over the child's reaction", 143, 0, true, ExitOutcome{"timed_out", state.RunTimedOutDeadline, 124}},
		{"deadline then SIGKILL", -1, syscall.SIGKILL, true, ExitOutcome{"timed_out", state.RunTimedOutDeadline, 124}},
	}
	for _, tt := range tests {
		if got := MapExit(tt.code, tt.sig, tt.timedOut); got != tt.want {
			t.Errorf("%s: %+v, want %+v", tt.name, got, tt.want)
		}
	}
}

func TestExitTarget(t *testing.T) {
	tests := []struct{ typ, from, to, want string }{
		{"session", "running", "completed", "completed"},
		{"session", "running", "aborted", "aborted"},
		{"invocation", "running", "completed", "succeeded"},
		{"invocation", "running", "aborted", "cancelled"},
		{"subagent", "running", "aborted", "interrupted"},
		{"subagent", "detached", "aborted", "cancelled"}, // no detached->interrupted edge
		{"turn", "running", "cancelled", "interrupted"},
		{"turn", "running", "interrupted", "interrupted"}, // the type's own word
		{"agent", "busy", "stopped", "stopped"},
		{"workflow", "running", "aborted", "cancelled"},
		{"workflow", "held", "aborted", "cancelled"},
		{"workflow", "running", "cancelled", "cancelled"},
		{"agent", "busy", "completed", "stopped"},
		{"agent", "busy", "aborted", "failed"},
		{"schedule", "active", "failed", ""},
		{"session", "completed", "failed", ""}, // a terminal state is a latch
	}
	for _, tt := range tests {
		got := graphs[tt.typ].Nearest(tt.from, tt.to)
		if got != tt.want {
			t.Errorf("Nearest(%s, %s, %s) = %q, want %q", tt.typ, tt.from, tt.to, got, tt.want)
		}
		if got != "" && !graphs[tt.typ].Allowed(tt.from, got) {
			t.Errorf("Nearest(%s, %s, %s) = %q is not an edge", tt.typ, tt.from, tt.to, got)
		}
	}
}

// TestGraphMapExitSignals (issue 14, observation 11): a SIGINT or SIGTERM
// ends every type with a process in its own word for an intended stop,
// reachable from running (or, for an agent, from busy), and never in a
// state that reads critical.
func TestGraphMapExitSignals(t *testing.T) {
	tests := []struct {
		typ     string
		sig     syscall.Signal
		code    int
		to      string
		reason  state.ReasonCode
		exitNow int
	}{
		{"session", syscall.SIGINT, -1, "cancelled", state.RunCancelledSigint, 130},
		{"session", 0, 143, "cancelled", state.RunCancelledSigterm, 143},
		{"workflow", syscall.SIGTERM, -1, "cancelled", state.RunCancelledSigterm, 143},
		{"workflow", 0, 130, "cancelled", state.RunCancelledSigint, 130},
		{"invocation", syscall.SIGINT, -1, "cancelled", state.RunCancelledSigint, 130},
		{"play", syscall.SIGTERM, -1, "cancelled", state.RunCancelledSigterm, 143},
		{"subagent", syscall.SIGINT, -1, "interrupted", state.RunInterruptedSigint, 130},
		{"subagent", syscall.SIGTERM, -1, "cancelled", state.RunCancelledSigterm, 143},
		{"turn", syscall.SIGINT, -1, "interrupted", state.RunInterruptedSigint, 130},
		{"turn", syscall.SIGTERM, -1, "interrupted", state.RunInterruptedSigterm, 143},
		{"agent", syscall.SIGINT, -1, "stopped", state.RunCancelledSigint, 130},
		{"agent", syscall.SIGTERM, -1, "stopped", state.RunCancelledSigterm, 143},
		// A deadline still wins over the child's reaction to being told
		// to stop.
		{"workflow", syscall.SIGTERM, -1, "timed_out", state.RunTimedOutDeadline, 124},
	}
	for _, tt := range tests {
		g := graphs[tt.typ]
		got := g.MapExit(tt.code, tt.sig, tt.reason == state.RunTimedOutDeadline, true)
		if got.To != tt.to || got.Reason != tt.reason || got.ExitCode != tt.exitNow {
			t.Errorf("%s %v/%d: %+v, want %s %s %d", tt.typ, tt.sig, tt.code, got, tt.to, tt.reason, tt.exitNow)
			continue
		}
		from := "running"
		if tt.typ == "agent" {
			from = "busy"
		}
		if !g.Allowed(from, got.To) {
			t.Errorf("%s: %s is not reachable from %s", tt.typ, got.To, from)
		}
		if sev, _ := state.DeriveSeverity(got.To, state.HealthUnknown, state.DeliveryNotExpected); tt.reason != state.RunTimedOutDeadline && sev != state.SeverityNeutral {
			t.Errorf("%s %s reads %s, want neutral", tt.typ, got.To, sev)
		}
		if err := state.CheckCode(string(got.Reason)); err != nil {
			t.Errorf("%s: %v", tt.typ, err)
		}
	}
}
