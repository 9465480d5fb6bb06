package probe

import (
	"strings"
	"testing"
	"time"

	"watchdog/state"
)

// TestEvidenceTimesAreTheDetailsMoments: every moment an evidence detail
// writes is in its Times, with the very text the detail writes, in the
// detail's order, so the page can show each in the reader's zone with
// its age while the stored words stay as they are.
func TestEvidenceTimesAreTheDetailsMoments(t *testing.T) {
	start := time.Date(2026, 11, 23, 14, 2, 11, 150_000_000, time.UTC)
	hbAt := start.Add(time.Hour)
	checked := start.Add(2 * time.Hour)
	subject := PIDSubject{PID: 4242, StartTime: start}
	for _, c := range []struct {
		name  string
		ev    state.EvidenceRef
		count int
	}{
		{"alive", PIDObservation{Subject: subject, Liveness: Alive, State: 'S', StartTime: start}.Evidence(checked), 1},
		{"dead", PIDObservation{Subject: subject, Liveness: Dead, Cause: CauseNoSuchProcess}.Evidence(checked), 1},
		{"reused", PIDObservation{Subject: subject, Liveness: Dead, Cause: CausePIDReused, StartTime: hbAt}.Evidence(checked), 2},
		{"no pid", PIDObservation{Cause: CauseNoPID}.Evidence(checked), 0},
		{"heartbeat", HeartbeatObservation{Source: HeartbeatFile, File: "/run/s.hb", At: hbAt}.Evidence(checked), 1},
		{"skewed heartbeat", HeartbeatObservation{Source: HeartbeatPosted, At: checked, Claimed: checked.Add(time.Hour), Skew: time.Hour}.Evidence(checked), 2},
		{"no heartbeat", HeartbeatObservation{Source: HeartbeatNone}.Evidence(checked), 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			if len(c.ev.Times) != c.count {
				t.Fatalf("%q: %d times %+v, want %d", c.ev.Detail, len(c.ev.Times), c.ev.Times, c.count)
			}
			rest := c.ev.Detail
			for _, tm := range c.ev.Times {
				i := strings.Index(rest, tm.Text)
				if tm.Text == "" || i < 0 {
					t.Fatalf("%q does not write %q (in order)", c.ev.Detail, tm.Text)
				}
				rest = rest[i+len(tm.Text):]
				if tm.At.IsZero() {
					t.Errorf("%q: no moment", tm.Text)
				}
			}
		})
	}
	if ts := (PIDObservation{Subject: subject, Liveness: Alive, StartTime: start}).Evidence(checked).Times; !ts[0].At.Equal(start.Truncate(time.Microsecond)) || ts[0].Text != "1795442531.15" {
		t.Errorf("the alive start time: %+v, want %v written as 1795442531.15", ts, start)
	}
}
