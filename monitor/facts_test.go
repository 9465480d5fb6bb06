package monitor

import (
	"math"
	"testing"
	"unsafe"

	"watchdog/state"
	"watchdog/store"
)

// TestTrackedSize holds the monitor's per-entity struct to its size
// class: a field added, or a small one moved from beside the others,
// costs every open entity a class (32 bytes; ADR-0052).
func TestTrackedSize(t *testing.T) {
	if got := unsafe.Sizeof(tracked{}); got > 288 {
		t.Errorf("tracked is %d bytes, past the 288 size class", got)
	}
}

// TestFactsGiveBack: the type and id sliced from the key, the health
// from its place, the pid from 32 bits come back as handed in, and what
// does not fit reads as the timing rules need it.
func TestFactsGiveBack(t *testing.T) {
	for _, tc := range []struct {
		name       string
		typ, id    string
		health     state.Health
		pid        int
		wantHealth state.Health
		wantPID    int
	}{
		{"common", "session", "s-1", state.HealthRunning, 4242, state.HealthRunning, 4242},
		{"an id with slashes", "session", "a/b/c", state.HealthIdle, 1, state.HealthIdle, 1},
		{"an empty id", "job", "", state.HealthLost, 0, state.HealthLost, 0},
		{"every health's last", "schedule", "x", state.Healths[len(state.Healths)-1], 0, state.Healths[len(state.Healths)-1], 0},
		{"no health", "session", "s", "", 0, otherHealth, 0},
		{"a health none of the known ones", "session", "s", "hand_edited", 0, otherHealth, 0},
		{"a pid past 32 bits", "session", "s", state.HealthRunning, 1 << 40, state.HealthRunning, math.MaxInt32},
		{"a negative pid", "session", "s", state.HealthRunning, -7, state.HealthRunning, -7},
	} {
		e := store.Entity{Type: tc.typ, ID: tc.id, Health: tc.health, PID: tc.pid}
		f := factsOf(Key(e.Type, e.ID), &e)
		got := f.entity()
		if got.Type != tc.typ || got.ID != tc.id || got.Health != tc.wantHealth || got.PID != tc.wantPID {
			t.Errorf("%s: got %q %q %q %d, want %q %q %q %d", tc.name, got.Type, got.ID, got.Health, got.PID, tc.typ, tc.id, tc.wantHealth, tc.wantPID)
		}
		for _, h := range []state.Health{state.HealthIdle, state.HealthStalled, state.HealthProcessDead, state.HealthOrphaned} {
			if (got.Health == h) != (tc.health == h) {
				t.Errorf("%s: reads as %s: %v, handed in %s", tc.name, h, got.Health == h, tc.health)
			}
		}
	}
}
