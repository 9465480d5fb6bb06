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

// unavailable is the driver's store.Classify answer for an unmarked read
// error: SQLite's result code says the store cannot be used now.
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

// unavailableCode reports an SQLite result code for a cause outside watchdog
// that may clear (not corruption).
func unavailableCode(code int) bool {
	switch code & 0xff {
	case codeBusy, codeLocked, codeReadOnly, codeIOErr, codeFull, codeCantOpen:
		return true
	}
	return false
}

// readSideIOErrs are SQLITE_IOERR_* codes after which no commit frame can be
// on disk (SQLite stops at the first failed WAL write); a failed fsync or
// truncate may follow a whole one.
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

// commitMayHaveLanded reports a commit's error after which the write may be
// in the database: an I/O error writing or syncing the WAL, whose whole
// commit frame the next open replays.
func commitMayHaveLanded(err error) bool {
	var se *sqlite3.Error
	if !errors.As(err, &se) {
		return false
	}
	code := se.Code()
	return code&0xff == codeIOErr && !readSideIOErrs[code]
}
