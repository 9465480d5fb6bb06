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
		{"130", 130, 0, false, ExitOutcome{"aborted", state.RunAbortedSigint, 130}},
		{"143", 143, 0, false, ExitOutcome{"cancelled", state.RunCancelledSigterm, 143}},
		{"1", 1, 0, false, ExitOutcome{"failed", state.RunFailedExitNonzero, 1}},
		{"2", 2, 0, false, ExitOutcome{"failed", state.RunFailedExitNonzero, 2}},
		{"killed by SIGINT", -1, syscall.SIGINT, false, ExitOutcome{"aborted", state.RunAbortedSigint, 130}},
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
		{"workflow", "running", "aborted", "failed"}, // cancelled only from held
		{"workflow", "held", "aborted", "cancelled"},
		{"workflow", "running", "cancelled", "failed"},
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
