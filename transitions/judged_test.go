package transitions

import (
	"testing"
	"time"

	"watchdog/store"
)

// TestJudgementInputs: what a caller of the probe tells it from the
// entity's type and record (issue 14, observations 5 and 8).
func TestJudgementInputs(t *testing.T) {
	t0 := time.Unix(1_800_000_000, 0)
	lc := func(s string) *string { return &s }
	for _, tc := range []struct {
		name    string
		e       store.Entity
		waiting bool
		judged  bool
	}{
		{"busy agent works", store.Entity{Type: "agent", Lifecycle: lc("busy"), PID: 7, CreatedAt: t0, LifecycleAt: t0}, false, true},
		{"idle agent waits", store.Entity{Type: "agent", Lifecycle: lc("idle"), PID: 7, CreatedAt: t0, LifecycleAt: t0.Add(time.Minute)}, true, true},
		{"suspended agent waits", store.Entity{Type: "agent", Lifecycle: lc("suspended"), HeartbeatFile: "/hb"}, true, true},
		{"held workflow waits", store.Entity{Type: "workflow", Lifecycle: lc("held"), HeartbeatAt: t0}, true, true},
		{"running session works", store.Entity{Type: "session", Lifecycle: lc("running"), PID: 7}, false, true},
		{"ended session neither", store.Entity{Type: "session", Lifecycle: lc("aborted"), Terminal: true, PID: 7}, false, true},
		{"show has nothing to judge", store.Entity{Type: "show", Lifecycle: lc("active")}, true, false},
		{"legacy is not waiting", store.Entity{Type: "session"}, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Waiting(tc.e); got != tc.waiting {
				t.Errorf("Waiting = %v, want %v", got, tc.waiting)
			}
			if got := Judged(tc.e); got != tc.judged {
				t.Errorf("Judged = %v, want %v", got, tc.judged)
			}
		})
	}
}
