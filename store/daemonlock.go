package store

import "context"

// What keeps a store's daemons apart, one per host: SQLite locks files, PostgreSQL
// holds session advisory locks, so none of it is part of Backend.

// CheckDSN runs driver's Check on dsn ("" is sqlite); nil for a driver
// with nothing to check or not built in (Open says so).
func CheckDSN(driver, dsn string) error {
	if d, ok := lookup(driver); ok && d.Check != nil {
		return d.Check(dsn)
	}
	return nil
}

// LockHost takes driver's lock for hostID's daemon at dsn before it opens
// (Driver.LockHost); a no-op release for a driver without one.
func LockHost(driver, dsn, hostID string) (release func() error, err error) {
	if d, ok := lookup(driver); ok && d.LockHost != nil {
		return d.LockHost(dsn, hostID)
	}
	return func() error { return nil }, nil
}

// HostLocks is what a store's daemon locks say of the daemons serving it:
// a held lock is a daemon alive, known without a write.
type HostLocks interface {
	// Holds says whether the daemon of hostID holds its lock.
	Holds(hostID string) bool
	// Others says whether a daemon of another host id holds one.
	Others(hostID string) bool
}

// SessionLock is an advisory lock held by a PostgreSQL session of its own;
// the session's end, however the daemon ended, frees it.
type SessionLock interface {
	// Try takes the lock when free, or proves this session still holds
	// it; fresh says this call took it.
	Try(ctx context.Context) (held, fresh bool, err error)
	// Release gives the lock up.
	Release(ctx context.Context) error
}
