package store

import (
	"errors"

	"modernc.org/sqlite"
)

// ErrOutcomeUnknown: a write's commit was attempted and its result could
// not be learned, so the write may or may not be in the store. PostgreSQL:
// the connection failed after COMMIT was sent. SQLite: an I/O error while
// the commit was written or synced (the commit frame may be on disk and
// replayed by the next open), or the database file deleted or replaced
// while the transaction ran (the write went into the lost file, which
// the daemon's rescue copies). A client re-reads before it retries. It
// never wraps ErrUnavailable: that one means nothing was written.
var ErrOutcomeUnknown = errors.New("store: the write's outcome is unknown")

// ErrShortOfSpace: the disk holding the store is below its reserve
// (minFreeBytes, and once below, until reserveBytes is free again). Every
// write is refused meanwhile, so the daemon's own background writes cannot
// eat the space an operator frees. It is always wrapped with
// ErrUnavailable.
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
// What is left is SQLite's own error codes, which a read returns
// unclassified: a read that cannot open the database (no file descriptor
// left), a read-only, full or failing disk, a database locked past the
// busy budget wrote nothing, so it is FailureNotWritten too.
func Classify(err error) Failure {
	switch {
	case err == nil:
		return FailureFault
	case errors.Is(err, ErrOutcomeUnknown):
		return FailureOutcomeUnknown
	case errors.Is(err, ErrUnavailable):
		return FailureNotWritten
	}
	var se *sqlite.Error
	if errors.As(err, &se) && unavailableCode(se.Code()) {
		return FailureNotWritten
	}
	return FailureFault
}

// SQLite result codes the store sorts by (primary codes).
const (
	codeBusy     = 5
	codeLocked   = 6
	codeReadOnly = 8
	codeIOErr    = 10
	codeCorrupt  = 11
	codeFull     = 13
	codeCantOpen = 14
	codeNotADB   = 26
)

// unavailableCode reports an SQLite result code that says the store cannot
// take a call now, for a reason outside watchdog that may clear: a
// read-only, full or failing file system, a file that cannot be opened
// (the process is out of descriptors), a lock held past the busy budget.
// Corruption is not one: it does not clear by itself.
func unavailableCode(code int) bool {
	switch code & 0xff {
	case codeBusy, codeLocked, codeReadOnly, codeIOErr, codeFull, codeCantOpen:
		return true
	}
	return false
}

// I/O error codes (extended SQLITE_IOERR_*) after which a commit frame
// cannot be on disk: those of reading, locking or mapping, and a failed
// write itself (SQLite writes the WAL's frames in order, the commit frame
// last, and stops at the first failed write, so a commit whose write
// failed wrote no whole commit frame: a read-only remount, EIO, ENOSPC
// answered to pwrite). What is left, a failed fsync or truncate, may
// follow a commit frame that is whole on disk.
var readSideIOErrs = map[int]bool{
	codeIOErr | 1<<8:  true, // READ
	codeIOErr | 2<<8:  true, // SHORT_READ
	codeIOErr | 3<<8:  true, // WRITE
	codeIOErr | 7<<8:  true, // FSTAT
	codeIOErr | 9<<8:  true, // RDLOCK
	codeIOErr | 12<<8: true, // NOMEM
	codeIOErr | 13<<8: true, // ACCESS
	codeIOErr | 14<<8: true, // CHECKRESERVEDLOCK
	codeIOErr | 15<<8: true, // LOCK
	codeIOErr | 18<<8: true, // SHMOPEN
	codeIOErr | 19<<8: true, // SHMSIZE
	codeIOErr | 20<<8: true, // SHMLOCK
	codeIOErr | 21<<8: true, // SHMMAP
	codeIOErr | 24<<8: true, // MMAP
}

// commitMayHaveLanded reports an SQLite error of a commit (an explicit
// COMMIT, or an autocommit write statement, whose end is its commit)
// after which the write may be in the database: an I/O error while the
// WAL's frames were written or synced. In WAL mode a commit frame that
// reached the disk whole is replayed by the next open even though its
// fsync failed. A full or read-only disk, or a file that cannot be opened,
// fails before the commit frame is written.
func commitMayHaveLanded(err error) bool {
	var se *sqlite.Error
	if !errors.As(err, &se) {
		return false
	}
	code := se.Code()
	return code&0xff == codeIOErr && !readSideIOErrs[code]
}
