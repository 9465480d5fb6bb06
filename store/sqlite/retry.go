package sqlite

import (
	"context"
	"errors"
	"math/rand/v2"
	"time"

	sqlite3 "modernc.org/sqlite"
)

// busyBudget bounds how long a write keeps retrying a busy database.
const busyBudget = 60 * time.Second

// isBusy reports SQLITE_BUSY and SQLITE_LOCKED (and their extended codes).
func isBusy(err error) bool {
	var se *sqlite3.Error
	if !errors.As(err, &se) {
		return false
	}
	switch se.Code() & 0xff {
	case 5, 6: // SQLITE_BUSY, SQLITE_LOCKED
		return true
	}
	return false
}

// writeTx runs fn as one write transaction, serialised in this process and
// retried whole while another process holds the lock (the busy handler is
// unfair; fn re-reads what it decides on). Identity and reserve are checked
// before (nothing written) and identity after: a commit into a replaced file
// is outcome-unknown (lostDuring). fn's errors may be its commit's (atCommit).
func (s *Store) writeTx(ctx context.Context, fn func() error) (err error) {
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	s.writes.Start()
	defer func() { s.writes.Done(err) }()
	if err := s.writable(); err != nil {
		return err
	}
	err = s.retryBusy(ctx, fn)
	if err != nil {
		return s.classifyWriteErr(err, atCommit)
	}
	if err := s.usable(); err != nil {
		return lostDuring(err)
	}
	return nil
}

// retryBusy runs fn until it succeeds, fails with anything but a busy
// database, or busyBudget is spent.
func (s *Store) retryBusy(ctx context.Context, fn func() error) error {
	deadline := time.Now().Add(busyBudget)
	backoff := 2 * time.Millisecond
	for {
		err := fn()
		if err == nil || !isBusy(err) || time.Now().After(deadline) {
			return err
		}
		jitter := time.Duration(rand.Int64N(int64(backoff)))
		select {
		case <-ctx.Done():
			return errors.Join(err, ctx.Err())
		case <-time.After(backoff + jitter):
		}
		if backoff < 100*time.Millisecond {
			backoff *= 2
		}
	}
}
