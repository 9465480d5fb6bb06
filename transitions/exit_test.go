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
	tests := []struct{ typ, to, want string }{
		{"session", "completed", "completed"},
		{"session", "aborted", "aborted"},
		{"invocation", "completed", "succeeded"},
		{"invocation", "aborted", "cancelled"},
		{"subagent", "aborted", "interrupted"},
		{"turn", "cancelled", "interrupted"},
		{"workflow", "aborted", "cancelled"},
		{"agent", "completed", "stopped"},
		{"agent", "aborted", "failed"},
		{"schedule", "failed", ""},
	}
	for _, tt := range tests {
		if got := ExitTarget(graphs[tt.typ], tt.to); got != tt.want {
			t.Errorf("ExitTarget(%s, %s) = %q, want %q", tt.typ, tt.to, got, tt.want)
		}
	}
}
