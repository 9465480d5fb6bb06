package attention

import (
	"testing"
	"time"

	"watchdog/state"
	"watchdog/store"
)

// TestSummaryNamesExit: a death's queue summary says how the process ended
// when the kernel said, once, and nothing more when it did not.
func TestSummaryNamesExit(t *testing.T) {
	now := time.Unix(1_000_000, 0)
	failed, running := "failed", "running"
	exit3 := &state.ExitStatus{Code: 3, At: now.Add(-time.Minute)}
	killed := &state.ExitStatus{Signal: 9, At: now.Add(-time.Minute)}
	enforced := &state.StateReason{Code: state.SystemHealthProcessDeadNoTerminal, Message: "process died without recording a terminal state"}
	ended := func(x *state.ExitStatus) store.Entity {
		return store.Entity{Type: "session", ID: "s", PID: 4242, Lifecycle: &failed, Terminal: true, TransitionReason: enforced,
			EndedAt: now.Add(-time.Minute), UpdatedAt: now.Add(-time.Minute), Exit: x}
	}
	dead := func(msg string, x *state.ExitStatus) store.Entity {
		return store.Entity{Type: "session", ID: "s", PID: 4242, Lifecycle: &running, Health: state.HealthProcessDead,
			Reasons: []state.StateReason{{Code: state.RunHealthProcessDead, Message: msg}}, UpdatedAt: now, Exit: x}
	}
	for _, tc := range []struct {
		name string
		e    store.Entity
		code state.ReasonCode
		want string
	}{
		{"enforced, exit 3", ended(exit3), state.SystemHealthProcessDeadNoTerminal, "process died without recording a terminal state: pid 4242 exited with status 3"},
		{"enforced, killed", ended(killed), state.SystemHealthProcessDeadNoTerminal, "process died without recording a terminal state: pid 4242 was killed by SIGKILL"},
		{"enforced, unknown", ended(nil), state.SystemHealthProcessDeadNoTerminal, "process died without recording a terminal state"},
		{"finding names it already", dead("process exited with status 3", exit3), state.RunHealthProcessDead, "process exited with status 3"},
		{"finding without it", dead("process is gone (no such process)", killed), state.RunHealthProcessDead, "process is gone (no such process): pid 4242 was killed by SIGKILL"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			items := ItemsOf(tc.e, now, 24*time.Hour)
			for _, it := range items {
				if it.Reason.Code == tc.code {
					if it.Reason.Summary != tc.want {
						t.Errorf("summary %q, want %q", it.Reason.Summary, tc.want)
					}
					return
				}
			}
			t.Fatalf("no %s item among %+v", tc.code, items)
		})
	}
}
