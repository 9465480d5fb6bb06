package main

// Issue 14's write-path observations (2, 3, 11) replayed against the
// built daemon: re-registration keeps what the watchdog keeps, a
// terminal transition carries its delivery, and a signal reads alike
// across types.

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"watchdog/internal/testenv"
	"watchdog/state"
	"watchdog/unixtime"
)

// TestTruthObs2ReRegistrationKeepsTheAge: an orchestrator that upserts
// its document again must not revive a stalled entity. Two sessions,
// one with an old heartbeat file and one that never sent a heartbeat
// (its age counts from its start), are stalled; registered again with
// the very same document, each stays stalled with the same started_at
// and health_since.
func TestTruthObs2ReRegistrationKeepsTheAge(t *testing.T) {
	d := truthStart(t, "")
	p := testenv.Sleep(t).Process.Pid
	hb := filepath.Join(t.TempDir(), "s.hb")
	if err := os.WriteFile(hb, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	old := time.Now().Add(-time.Minute)
	if err := os.Chtimes(hb, old, old); err != nil {
		t.Fatal(err)
	}
	docs := map[string]string{
		"o2-file":  fmt.Sprintf(`{"type":"session","id":"o2-file","lifecycle":"running","pid":%d,"heartbeat_file":%q}`, p, hb),
		"o2-start": fmt.Sprintf(`{"type":"session","id":"o2-start","lifecycle":"running","pid":%d}`, p),
	}
	for _, doc := range docs {
		d.register(t, doc)
	}
	stalled := func(id string) func() (bool, string) {
		return func() (bool, string) {
			e := d.must(t, "session", id)
			return e.State.Health == state.HealthStalled, e.Display
		}
	}
	for id := range docs {
		testenv.Eventually(t, id+" stalled", 30*time.Second, stalled(id))
	}
	d.assertCountsAgree(t)

	before := map[string][2]float64{}
	for id, doc := range docs {
		e := d.must(t, "session", id)
		before[id] = [2]float64{unixtime.Seconds(e.StartedAt.Time), unixtime.Seconds(e.HealthSince.Time)}
		d.register(t, doc)
	}
	// Past idle_after (1s) and one more sweep: a reset age would read
	// Alive at once and Idle a second later, never Stalled.
	deadline := time.Now().Add(3 * time.Second)
	for time.Now().Before(deadline) {
		for id := range docs {
			e := d.must(t, "session", id)
			if e.State.Health != state.HealthStalled {
				t.Fatalf("%s re-registered reads %s (%s): the registration revived it", id, e.State.Health, e.Display)
			}
			got := [2]float64{unixtime.Seconds(e.StartedAt.Time), unixtime.Seconds(e.HealthSince.Time)}
			if got != before[id] {
				t.Fatalf("%s re-registered: started_at, health_since %v, were %v", id, got, before[id])
			}
		}
		time.Sleep(200 * time.Millisecond)
	}
	d.assertCountsAgree(t)
}
