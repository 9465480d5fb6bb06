package attention

import (
	"time"

	"watchdog/state"
)

// AgedOut is the failure window's rule, stated once (the store's SQL
// applies it too): an outcome that arrived before Since, unless it lingers.
func AgedOut(outcome string, h state.Health, endedAt, lifecycleAt, updatedAt, now time.Time, window time.Duration) bool {
	if outcome == "" || Lingers(outcome, h) {
		return false
	}
	return Arrived(endedAt, lifecycleAt, updatedAt).Before(Since(now, window))
}

// Lingers reports whether an entity with an outcome keeps its items past
// the window: its process still lives (orphaned), so its condition is not over.
func Lingers(outcome string, h state.Health) bool {
	return outcome != "" && h == state.HealthOrphaned
}

// Arrived is when an entity reached its outcome, as AgedOut reckons it.
func Arrived(endedAt, lifecycleAt, updatedAt time.Time) time.Time {
	if !endedAt.IsZero() {
		return endedAt
	}
	if !lifecycleAt.IsZero() {
		return lifecycleAt
	}
	return updatedAt
}

// Since is the start of the failure window at now (0: DefaultFailureWindow).
func Since(now time.Time, window time.Duration) time.Time {
	if window <= 0 {
		window = DefaultFailureWindow
	}
	return now.Add(-window)
}
