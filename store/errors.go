package store

import "errors"

// Sentinel errors, checked with errors.Is.
var (
	// ErrNotFound: no entity with that type and id.
	ErrNotFound = errors.New("not found")
	// ErrConflict: the stored lifecycle changed since the decision (a lost
	// compare-and-set race).
	ErrConflict = errors.New("conflict")
	// ErrNotOwner: an owner-guarded registration met another uid's row; nothing
	// was written.
	ErrNotOwner = errors.New("the entity is another owner's")
)

// ErrUnavailable: the store cannot take writes now and nothing of the call
// was written (SQLite: its file lost or a refusing disk; PostgreSQL: the
// server gone or out of disk/connections). The API answers 503.
var ErrUnavailable = errors.New("store unavailable")

// ErrOutcomeUnknown: a commit was attempted and its result could not be
// learned, so a client re-reads before it retries. It never wraps
// ErrUnavailable, which means nothing was written.
var ErrOutcomeUnknown = errors.New("store: the write's outcome is unknown")

// ErrShortOfSpace: the store's disk is below its reserve, so every write is
// refused and background writes cannot eat freed space. Always wrapped with
// ErrUnavailable.
var ErrShortOfSpace = errors.New("the disk holding the store is short of space")

// Failure is what a failed store call means for its write; the HTTP API
// turns it into a status (Classify).
type Failure int

const (
	// FailureFault: the caller's error or a fault of watchdog or the data (500).
	FailureFault Failure = iota
	// FailureNotWritten: store unavailable, nothing written; retry later (503).
	FailureNotWritten
	// FailureOutcomeUnknown: commit result unknown; re-read first (504).
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

// Classify says what err, from any store call, means for its write. Drivers
// mark write failures themselves (only they know before-commit from at-commit);
// each registered driver's Unavailable classifies the unmarked read errors.
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
