package attention

import (
	"time"

	"watchdog/state"
)

// AgedOut is the failure window's rule, stated once: an entity with an
// outcome that got there before the window began (Since) has aged out,
// and its items have left the queue, unless it lingers (Lingers: h). When
// it got there is the first non-zero of endedAt, lifecycleAt and
// updatedAt. An entity without an outcome (still open) never ages out.
//
// The store applies the same rule in SQL, taking Since's cut-off as its
// parameter: AttentionCandidates reads only what may still be inside the
// window (COALESCE(ended_at, lifecycle_at, updated_at) >= since).
func AgedOut(outcome string, h state.Health, endedAt, lifecycleAt, updatedAt, now time.Time, window time.Duration) bool {
	if outcome == "" || Lingers(outcome, h) {
		return false
	}
	return Arrived(endedAt, lifecycleAt, updatedAt).Before(Since(now, window))
}

// Lingers reports whether an entity with an outcome keeps its items past
// the failure window: its process is still alive after its end was
// recorded (health orphaned), so its condition is not over, whatever its
// age. The probe keeps judging such an entity (store.Filter.EndedSince),
// so the health changes, and the items age out by the window's rule, once
// the process is gone.
func Lingers(outcome string, h state.Health) bool {
	return outcome != "" && h == state.HealthOrphaned
}

// Arrived is when an entity reached its outcome, as AgedOut reckons it:
// the first non-zero of endedAt, lifecycleAt and updatedAt. The live view
// keeps it per entity and orders the entities with an outcome by it, so
// the failure window's cut is one binary search.
func Arrived(endedAt, lifecycleAt, updatedAt time.Time) time.Time {
	if !endedAt.IsZero() {
		return endedAt
	}
	if !lifecycleAt.IsZero() {
		return lifecycleAt
	}
	return updatedAt
}

// Since is the start of the failure window at now (window 0 means
// DefaultFailureWindow): the cut-off of AgedOut, and the since argument of
// the store's queries that apply the same rule (sqlite.Store's
// AttentionCandidates, which reads only the entities that may have items,
// so a poll reads a small part of a large store).
func Since(now time.Time, window time.Duration) time.Time {
	if window <= 0 {
		window = DefaultFailureWindow
	}
	return now.Add(-window)
}
