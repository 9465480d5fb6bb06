package store

import "time"

// WriteHealth is what a store's own writes showed lately: readiness evidence
// that needs no write of its own (ADR-0038).
type WriteHealth struct {
	// LastOK is when a write transaction last committed (zero: none yet).
	LastOK time.Time
	// Failed is the last write's failure for the store's sake (storesFault), nil
	// once one commits; a caller's own error leaves it as it was.
	Failed error
	// Stalled is since when writes have run without any finishing (zero: none):
	// a hung disk or another process's write lock.
	Stalled time.Time
}
