package store

import (
	"context"
	"errors"
	"sync"
	"time"

	"modernc.org/sqlite"
)

// WriteHealth is what a store's own writes showed lately: the evidence the
// daemon's readiness is made of, so that it needs no write of its own
// while real writes happen (issue "quiet when nothing happens", ADR-0038).
type WriteHealth struct {
	// LastOK is when a write transaction last committed (zero: none
	// since the store was opened). The write probe counts: it is one.
	LastOK time.Time
	// Failed is the last write transaction's failure when it failed for
	// the store's sake (a file system that refuses writes, a lost file, a
	// server gone, a table SQLite cannot find: see storesFault), nil once
	// a write commits again. A caller's own error (a conflict, not found,
	// its context ended) is not the store's and leaves it as it was.
	Failed error
	// Stalled is since when writes have been running without any of
	// them finishing (zero: none is running, or one finished since the
	// last began): a hung disk, or another process holding the
	// database's write lock.
	Stalled time.Time
}

// WriteWatch records the outcome of a store's write transactions and
// tells a reader when the store's health may have changed: a write
// failing for the store's sake after none did, the first commit after a
// failure, or (Tell) an event a driver sees itself, such as a database
// file deleted or replaced. Both drivers embed one. The zero value is
// ready to use.
type WriteWatch struct {
	mu      sync.Mutex
	lastOK  time.Time
	failed  error
	running int
	since   time.Time
	once    sync.Once
	told    chan struct{}
}

func (w *WriteWatch) ch() chan struct{} {
	w.once.Do(func() { w.told = make(chan struct{}, 1) })
	return w.told
}

// HealthEvents returns a channel told whenever the store's health may
// have changed (see WriteWatch); a reader checks the store then, instead
// of polling it. One buffered slot: a burst is told once.
func (w *WriteWatch) HealthEvents() <-chan struct{} { return w.ch() }

// Tell wakes the reader of HealthEvents.
func (w *WriteWatch) Tell() {
	select {
	case w.ch() <- struct{}{}:
	default:
	}
}

// WriteHealth returns what the writes showed so far.
func (w *WriteWatch) WriteHealth() WriteHealth {
	w.mu.Lock()
	defer w.mu.Unlock()
	h := WriteHealth{LastOK: w.lastOK, Failed: w.failed}
	if w.running > 0 {
		h.Stalled = w.since
	}
	return h
}

// Start records a write transaction starting; Done, with its result,
// must follow.
func (w *WriteWatch) Start() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.running == 0 {
		w.since = time.Now()
	}
	w.running++
}

// Done records the end of a write transaction begun with Start: err is
// its result as the driver returns it (classified).
func (w *WriteWatch) Done(err error) {
	now := time.Now()
	w.mu.Lock()
	w.running--
	// One finished: whatever still runs is measured from here.
	w.since = now
	changed := false
	switch {
	case err == nil:
		w.lastOK = now
		changed = w.failed != nil
		w.failed = nil
	case storesFault(err):
		changed = w.failed == nil
		w.failed = err
	}
	w.mu.Unlock()
	if changed {
		w.Tell()
	}
}

// storesFault says whether a write's error is the store's rather than the
// caller's: see WriteHealth.Failed. The store's are those Classify says
// were not written or have an unknown outcome, and any other error SQLite
// itself answered (a table gone, corruption): none of them is a decision
// of the caller's. A caller that gave up (its context) says nothing about
// the store; a deadline of the store's own probe is reported by the probe
// itself. The daemon answers a failure with a write probe at once, which
// decides: an error of one write alone does not make it not ready.
func storesFault(err error) bool {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return false
	}
	var se *sqlite.Error
	return Classify(err) != FailureFault || errors.As(err, &se)
}
