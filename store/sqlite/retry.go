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

// writeTx runs fn as one write transaction, serialised with the other
// writes of this process, and retried from scratch while another process
// holds the database lock.
//
// SQLite's busy handler polls, and polling is unfair: a process that
// commits and immediately begins again can starve a waiter past
// busy_timeout. A whole-transaction retry is safe because fn re-reads
// everything it decides on inside the transaction and a rolled-back
// attempt left nothing behind.
//
// The store's identity and its disk's reserve are checked before the
// transaction (writable: a refusal there wrote nothing), and the identity
// again after it: a commit that landed in a database file deleted or
// replaced meanwhile is never acknowledged; it is in the lost file, which
// the daemon rescues, so its outcome is unknown (lostDuring).
//
// fn's statements are autocommit ones (each its own transaction), so an
// error of fn may be its commit's: classified atCommit.
//
// Its outcome is recorded for WriteHealth (the daemon's readiness).
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
