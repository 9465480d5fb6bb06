package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sync"
)

// maxGroup bounds how many writes share one commit: a group holds the
// write lock for as long as its members take, and a reader of the WAL or
// another process's writer should not wait behind thousands of them.
const maxGroup = 128

// groupMember is one write waiting to be committed with whatever others
// are waiting at the same moment (see groupWrite).
type groupMember struct {
	// ctx is the caller's: a member whose caller has gone is skipped
	// before it runs. Its statements run under the group's context, so
	// one caller leaving cannot interrupt the others' transaction.
	ctx context.Context
	// label names the write in an error the whole group shares.
	label string
	// run does the member's reads and writes inside tx; an error rolls
	// back its own writes only (its savepoint).
	run func(ctx context.Context, tx *sql.Tx) error

	err error
	// wake is signalled once: either the member's outcome is in err, or
	// (lead set) the member is to commit the next group.
	wake chan struct{}
	lead bool
}

// committer queues writes waiting for the write lock. One member leads: it
// commits every member queued as one group and hands the lead on; a lone
// write leads at once.
type committer struct {
	mu      sync.Mutex
	queue   []*groupMember
	leading bool // invariant: !leading implies len(queue) == 0
	// groups and members count the commits and the writes in them, for
	// the tests that show writes do share commits.
	groups, members int64
}

// groupWrite runs run in a write transaction shared with the waiting group
// writes, inside its own savepoint, so its failure rolls back and returns to it
// alone while the group shares one fsync (ADR-0018). nil means durable.
// label names the write in a group's error.
func (s *Store) groupWrite(ctx context.Context, label string, run func(ctx context.Context, tx *sql.Tx) error) error {
	m := &groupMember{ctx: ctx, label: label, run: run, wake: make(chan struct{}, 1)}
	c := &s.group
	c.mu.Lock()
	c.queue = append(c.queue, m)
	if c.leading {
		c.mu.Unlock()
		// No select on ctx: a member queued may already be running in a
		// leader's transaction, and the lead may be handed to it; either
		// way it is bounded by one group's time.
		<-m.wake
		if !m.lead {
			return m.err
		}
	} else {
		c.leading = true
		c.mu.Unlock()
	}
	s.leadGroup()
	return m.err
}

// leadGroup commits one group (the leader is at the head of the queue, so
// it is in it) and hands the lead on.
func (s *Store) leadGroup() {
	c := &s.group
	s.writeMu.Lock()
	c.mu.Lock()
	n := min(len(c.queue), maxGroup)
	batch := make([]*groupMember, n)
	copy(batch, c.queue)
	c.queue = append(c.queue[:0], c.queue[n:]...)
	c.groups++
	c.members += int64(n)
	c.mu.Unlock()

	s.writes.Start()
	s.writes.Done(s.commitGroup(batch))
	s.writeMu.Unlock()

	// batch[0] is the leader itself: its caller reads err on return.
	for _, m := range batch[1:] {
		m.wake <- struct{}{}
	}
	c.mu.Lock()
	if len(c.queue) == 0 {
		c.leading = false
	} else {
		next := c.queue[0]
		next.lead = true
		next.wake <- struct{}{}
	}
	c.mu.Unlock()
}

// commitGroup runs the members in one write transaction (writeTx) and sets
// each one's err. It returns what WriteHealth records: nil if any committed.
func (s *Store) commitGroup(batch []*groupMember) (groupErr error) {
	// Values (not cancellation) of the first caller's context: the
	// statements of the others must not die with one client.
	ctx := context.WithoutCancel(batch[0].ctx)
	fail := func(err error) {
		groupErr = err
		for _, m := range batch {
			m.err = fmt.Errorf("%s: %w", m.label, err)
		}
	}
	if err := s.writable(); err != nil {
		fail(err)
		return
	}
	var errs []error
	err := s.retryBusy(ctx, func() error {
		var err error
		errs, err = s.runGroup(ctx, batch)
		return err
	})
	if err != nil {
		phase := beforeCommit
		var ce *commitError
		if errors.As(err, &ce) {
			phase = atCommit
		}
		fail(s.classifyWriteErr(err, phase))
		return
	}
	// A commit into a file deleted or replaced meanwhile went into the
	// lost file: no member is acknowledged, and none is told "not
	// written" either.
	if err := s.usable(); err != nil {
		fail(lostDuring(err))
		return
	}
	// A member failing for the store's sake is the store's health though the
	// rest committed; if all failed on their own, the first error is returned.
	wrote := false
	for i, m := range batch {
		m.err = errs[i]
		wrote = wrote || errs[i] == nil
		if groupErr == nil && errs[i] != nil && s.writes.StoresFault(errs[i]) {
			groupErr = errs[i]
		}
	}
	if groupErr == nil && !wrote {
		return errs[0]
	}
	return groupErr
}

// runGroup is one attempt at a group's transaction. The per-member errors
// are the members' own outcomes; the error is the group's (begin, a
// savepoint that cannot be rolled back, busy, the commit), which every
// member shares and which retryBusy may retry from scratch: each run
// re-reads what it decides on, and a rolled-back attempt left nothing.
func (s *Store) runGroup(ctx context.Context, batch []*groupMember) ([]error, error) {
	errs := make([]error, len(batch))
	tx, err := s.db.BeginTx(ctx, nil) // BEGIN IMMEDIATE: see DSN
	if err != nil {
		return nil, fmt.Errorf("begin: %w", err)
	}
	defer tx.Rollback()
	if len(batch) == 1 {
		// Alone, the transaction is the member's: no savepoint to pay
		// for, and its failure rolls back the transaction itself.
		m := batch[0]
		if err := m.ctx.Err(); err != nil {
			return []error{err}, nil
		}
		if err := runMember(ctx, tx, m); err != nil {
			if isBusy(err) {
				return nil, err
			}
			return []error{s.classifyWriteErr(err, beforeCommit)}, nil
		}
	} else {
		for i, m := range batch {
			if err := m.ctx.Err(); err != nil {
				errs[i] = err
				continue
			}
			if _, err := s.txExec(ctx, tx, "SAVEPOINT member"); err != nil {
				return nil, fmt.Errorf("savepoint: %w", err)
			}
			err := runMember(ctx, tx, m)
			if err == nil {
				if _, err := s.txExec(ctx, tx, "RELEASE member"); err != nil {
					return nil, fmt.Errorf("release savepoint: %w", err)
				}
				continue
			}
			if isBusy(err) {
				return nil, err
			}
			// An error SQLite answers by rolling back the whole
			// transaction (I/O, full disk) leaves no savepoint to roll
			// back to: then the member's error is the group's.
			if _, rerr := s.txExec(ctx, tx, "ROLLBACK TO member"); rerr != nil {
				return nil, errors.Join(err, fmt.Errorf("roll back its savepoint: %w", rerr))
			}
			if _, rerr := s.txExec(ctx, tx, "RELEASE member"); rerr != nil {
				return nil, errors.Join(err, fmt.Errorf("release its savepoint: %w", rerr))
			}
			errs[i] = s.classifyWriteErr(err, beforeCommit)
		}
	}
	if err := tx.Commit(); err != nil {
		return nil, &commitError{err: err}
	}
	return errs, nil
}

// commitError is a group's COMMIT failing: unlike a failure before it,
// an I/O error here may leave the group's writes on disk.
type commitError struct{ err error }

func (e *commitError) Error() string { return "commit: " + e.err.Error() }
func (e *commitError) Unwrap() error { return e.err }

// runMember runs one member's writes. A panic in them (a bug in a
// decider) becomes that member's error: left to unwind, it would leave
// the write lock held and every other member of the group waiting for
// ever.
func runMember(ctx context.Context, tx *sql.Tx, m *groupMember) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("%s: panic: %v", m.label, p)
		}
	}()
	return m.run(ctx, tx)
}
