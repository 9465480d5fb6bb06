package probe

import (
	"context"
	"errors"
	"testing"
	"time"

	"watchdog/internal/testenv"
)

// TestGoneIsOnlyCheaper: a subject whose process is not expected to run
// (Subject.Gone) is asked of the kernel first, and reads exactly as it
// would otherwise, dead, alive or a zombie.
func TestGoneIsOnlyCheaper(t *testing.T) {
	h := NewHost()
	now := time.Now()
	live := testenv.Sleep(t)
	for name, pid := range map[string]int{"dead": testenv.DeadPID(t), "alive": live.Process.Pid, "zombie": testenv.Zombie(t)} {
		subject := Subject{PID: pid, HostID: h.HostID()}
		want := h.Probe(context.Background(), subject, now)
		subject.Gone = true
		got := h.Probe(context.Background(), subject, now)
		if got.PID.Liveness != want.PID.Liveness || got.PID.Cause != want.PID.Cause || !errors.Is(got.PID.Err, want.PID.Err) ||
			got.PID.Detail() != want.PID.Detail() {
			t.Errorf("%s: gone reads %s (%s, %v) %q, else %s (%s, %v) %q", name, got.PID.Liveness, got.PID.Cause, got.PID.Err, got.PID.Detail(),
				want.PID.Liveness, want.PID.Cause, want.PID.Err, want.PID.Detail())
		}
	}
}
