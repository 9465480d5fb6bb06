package store

import "time"

// WriteHealth is what a store's own writes showed lately: the evidence the
// daemon's readiness is made of, so that it needs no write of its own
// while real writes happen (issue "quiet when nothing happens", ADR-0038).
type WriteHealth struct {
	// LastOK is when a write transaction last committed (zero: none
	// since the store was opened). The write probe counts: it is one.
	LastOK time.Time
	// Failed is the last write transaction's failure when it failed for
	// the store's sake (a file system that refuses writes, a lost file, a
	// server gone, a table SQLite cannot find: see storesFault), nil once
	// a write commits again. A caller's own error (a conflict, not found,
	// its context ended) is not the store's and leaves it as it was.
	Failed error
	// Stalled is since when writes have been running without any of
	// them finishing (zero: none is running, or one finished since the
	// last began): a hung disk, or another process holding the
	// database's write lock.
	Stalled time.Time
}
