package store

import "context"

// What keeps the daemons sharing a store apart, one per host, and tells
// them who else serves it. Each driver has its own way, so none of this is
// part of Backend: SQLite locks files beside the database (LockHost before
// it opens, HostLocks to read them), PostgreSQL holds advisory locks on
// sessions of their own (SessionLock).

// CheckDSN runs driver's Check on dsn ("" is sqlite); nil for a driver
// with nothing to check or not built in (Open says so).
func CheckDSN(driver, dsn string) error {
	if d, ok := lookup(driver); ok && d.Check != nil {
		return d.Check(dsn)
	}
	return nil
}

// LockHost takes driver's lock for the daemon of hostID on the store at
// dsn before it opens (Driver.LockHost); a release that does nothing for a
// driver without one.
func LockHost(driver, dsn, hostID string) (release func() error, err error) {
	if d, ok := lookup(driver); ok && d.LockHost != nil {
		return d.LockHost(dsn, hostID)
	}
	return func() error { return nil }, nil
}

// HostLocks is what a store's daemon locks say of the daemons serving it
// now, by host id (SQLite's lock files, read from the kernel's table of
// locks): a held lock is a daemon alive, known without a write.
type HostLocks interface {
	// Holds says whether the daemon of hostID holds its lock.
	Holds(hostID string) bool
	// Others says whether a daemon of another host id than hostID holds
	// one.
	Others(hostID string) bool
}

// SessionLock is an advisory lock held by a database session of its own
// (PostgreSQL's): the fleet's leadership, and each host's one daemon. The
// session's end, however the daemon ended, frees it.
type SessionLock interface {
	// Try takes the lock when free, or proves this session still holds
	// it; fresh says this call took it.
	Try(ctx context.Context) (held, fresh bool, err error)
	// Release gives the lock up.
	Release(ctx context.Context) error
}
