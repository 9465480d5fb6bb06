package store

import "errors"

// Sentinel errors, checked with errors.Is.
var (
	// ErrNotFound: no entity with that type and id.
	ErrNotFound = errors.New("not found")
	// ErrConflict: the stored lifecycle is no longer the one the decision
	// was made on (a lost compare-and-set race).
	ErrConflict = errors.New("conflict")
	// ErrNotOwner: a registration guarded by its owner (Entity.OwnerGuard)
	// met a row another uid owns: nothing was written.
	ErrNotOwner = errors.New("the entity is another owner's")
)

// ErrUnavailable: the store cannot take writes now, and nothing of the
// call was written. SQLite: its identity is lost (the database file, its
// WAL or its shared-memory index was deleted or replaced while this
// process had it open: every later write would go into a file nobody will
// ever open again, so none is made or acknowledged, until a restart), or
// the file system refuses writes (read-only, full, I/O errors), which may
// clear by itself. PostgreSQL: the server is gone, shutting down,
// read-only or out of disk or connections. The HTTP API answers it with
// 503.
var ErrUnavailable = errors.New("store unavailable")

// ErrOutcomeUnknown: a write's commit was attempted and its result could
// not be learned, so the write may or may not be in the store. PostgreSQL:
// the connection failed after COMMIT was sent. SQLite: an I/O error while
// the commit was written or synced (the commit frame may be on disk and
// replayed by the next open), or the database file deleted or replaced
// while the transaction ran (the write went into the lost file, which
// the daemon's rescue copies). A client re-reads before it retries. It
// never wraps ErrUnavailable: that one means nothing was written.
var ErrOutcomeUnknown = errors.New("store: the write's outcome is unknown")

// ErrShortOfSpace: the disk holding the store has less free than its
// reserve and one write's headroom (SQLite's reserve: once below, until
// its margin more is free again). Every write is refused meanwhile, so the
// daemon's own background writes cannot eat the space an operator frees.
// It is always wrapped with ErrUnavailable.
var ErrShortOfSpace = errors.New("the disk holding the store is short of space")

// Failure is what a failed store call means for a write that was part of
// it: the one answer both drivers give, which the HTTP API turns into its
// status (Classify).
type Failure int

const (
	// FailureFault: not a store-availability failure. Either the caller's
	// own error (not found, a conflict, a refused decision: the write path
	// names it) or a fault of watchdog or of the data (corruption, a
	// constraint): the API's 500 when nothing else names it.
	FailureFault Failure = iota
	// FailureNotWritten: the store could not take the call now (its file
	// lost, a read-only, full or failing disk, the server unreachable,
	// shutting down or out of connections) and nothing of the write was
	// written: safe to retry later. The API's 503, cause "unavailable".
	FailureNotWritten
	// FailureOutcomeUnknown: the commit was attempted and its result is
	// unknown (ErrOutcomeUnknown). The API's 504, cause "outcome_unknown":
	// re-read before retrying.
	FailureOutcomeUnknown
)

func (f Failure) String() string {
	switch f {
	case FailureNotWritten:
		return "not written"
	case FailureOutcomeUnknown:
		return "outcome unknown"
	}
	return "fault"
}

// Classify says what err, returned by any store call of either driver (or
// by code that wraps one), means for the write it was part of. The drivers
// mark their write failures themselves, because only they know whether a
// failure came before the commit or at it: a write failing before its
// commit wraps ErrUnavailable, one failing at it ErrOutcomeUnknown.
// What is left is a driver's own errors that a read returns unmarked
// (SQLite's result codes: a read that cannot open the database, a
// read-only, full or failing disk, a database locked past the busy
// budget): each registered driver's Unavailable says whether one of them
// wrote nothing because the store cannot be used now. A driver that is not
// linked in cannot have returned the error, so asking only the registered
// ones misses nothing.
func Classify(err error) Failure {
	switch {
	case err == nil:
		return FailureFault
	case errors.Is(err, ErrOutcomeUnknown):
		return FailureOutcomeUnknown
	case errors.Is(err, ErrUnavailable):
		return FailureNotWritten
	}
	for _, d := range registered() {
		if d.Unavailable != nil && d.Unavailable(err) {
			return FailureNotWritten
		}
	}
	return FailureFault
}
