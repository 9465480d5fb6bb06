package sqlite

import (
	"context"
	"errors"

	sqlite3 "modernc.org/sqlite"

	"watchdog/store"
)

func init() {
	store.Register(store.DriverSQLite, store.Driver{
		Open: func(ctx context.Context, dsn string) (store.Backend, error) {
			s, err := Open(ctx, dsn)
			if err != nil {
				return nil, err
			}
			return s, nil
		},
		Unavailable: unavailable,
		Check:       CheckDir,
		LockHost: func(dsn, hostID string) (func() error, error) {
			l, err := LockDaemonHost(dsn, hostID)
			if err != nil {
				return nil, err
			}
			return l.Release, nil
		},
	})
}

var (
	_ store.Backend = (*Store)(nil)
	_ store.Rescuer = (*Store)(nil)
)

// unavailable is the driver's answer to store.Classify for an error a
// read returned unmarked: SQLite's result code says the store cannot be
// used now (a read that cannot open the database, no file descriptor
// left; a read-only, full or failing disk; a database locked past the
// busy budget), and nothing was written.
func unavailable(err error) bool {
	var se *sqlite3.Error
	return errors.As(err, &se) && unavailableCode(se.Code())
}

// databaseError reports an error SQLite itself answered (any result
// code): the store's fault for WriteHealth (writewatch.Watch), though not
// one store.Classify names.
func databaseError(err error) bool {
	var se *sqlite3.Error
	return errors.As(err, &se)
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
	var se *sqlite3.Error
	if !errors.As(err, &se) {
		return false
	}
	code := se.Code()
	return code&0xff == codeIOErr && !readSideIOErrs[code]
}
