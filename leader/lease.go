package leader

import (
	"context"
	"time"
)

// LeaseStore is the part of the store a Lease uses (sqlite.Store).
type LeaseStore interface {
	TakeLease(ctx context.Context, name, holder string, now time.Time, ttl time.Duration) (bool, error)
	ReleaseLease(ctx context.Context, name, holder string) error
}

// LeaseName is the lease the daemons of one store contend for.
const LeaseName = "leader"

// Lease is the Backend of a store without locks of its own (SQLite): a
// lease row taken by compare-and-set and renewed at every try. Holder is
// the host id, so a restarted daemon takes its unexpired lease back.
type Lease struct {
	Store  LeaseStore
	Holder string
	// TTL is how long after its last renewal others may take it (LeaseTTL when zero).
	TTL time.Duration
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

// TryLock takes or renews the lease.
func (l Lease) TryLock(ctx context.Context) (bool, error) {
	ttl := l.TTL
	if ttl <= 0 {
		ttl = LeaseTTL
	}
	now := time.Now
	if l.Now != nil {
		now = l.Now
	}
	return l.Store.TakeLease(ctx, LeaseName, l.Holder, now(), ttl)
}

// Unlock releases the lease if this daemon holds it.
func (l Lease) Unlock(ctx context.Context) error {
	return l.Store.ReleaseLease(ctx, LeaseName, l.Holder)
}

// Always is the Backend of a daemon alone with its store, and of one-shot
// commands: it always leads.
type Always struct{}

// TryLock always succeeds.
func (Always) TryLock(context.Context) (bool, error) { return true, nil }

// Unlock does nothing.
func (Always) Unlock(context.Context) error { return nil }
