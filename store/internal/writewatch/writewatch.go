// Package writewatch is the record both store drivers keep of their own
// write transactions (store.WriteHealth), and the signal that tells the
// daemon when the store's health may have changed (HealthEvents).
package writewatch

import (
	"context"
	"errors"
	"sync"
	"time"

	"watchdog/store"
)

// Watch records the outcome of a store's write transactions and
// tells a reader when the store's health may have changed: a write
// failing for the store's sake after none did, the first commit after a
// failure, or (Tell) an event a driver sees itself, such as a database
// file deleted or replaced. Both drivers embed one. The zero value is
// ready to use.
type Watch struct {
	// DatabaseError reports an error the database itself answered
	// (SQLite's: a table it cannot find, corruption), which is the
	// store's fault though Classify calls it a fault; nil when the driver
	// marks every error of the store's own itself. Set it before the
	// first write.
	DatabaseError func(error) bool

	mu      sync.Mutex
	lastOK  time.Time
	failed  error
	running int
	since   time.Time
	once    sync.Once
	told    chan struct{}
}

func (w *Watch) ch() chan struct{} {
	w.once.Do(func() { w.told = make(chan struct{}, 1) })
	return w.told
}

// HealthEvents returns a channel told whenever the store's health may
// have changed (see Watch); a reader checks the store then, instead
// of polling it. One buffered slot: a burst is told once.
func (w *Watch) HealthEvents() <-chan struct{} { return w.ch() }

// Tell wakes the reader of HealthEvents.
func (w *Watch) Tell() {
	select {
	case w.ch() <- struct{}{}:
	default:
	}
}

// WriteHealth returns what the writes showed so far.
func (w *Watch) WriteHealth() store.WriteHealth {
	w.mu.Lock()
	defer w.mu.Unlock()
	h := store.WriteHealth{LastOK: w.lastOK, Failed: w.failed}
	if w.running > 0 {
		h.Stalled = w.since
	}
	return h
}

// Start records a write transaction starting; Done, with its result,
// must follow.
func (w *Watch) Start() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.running == 0 {
		w.since = time.Now()
	}
	w.running++
}

// Done records the end of a write transaction begun with Start: err is
// its result as the driver returns it (classified).
func (w *Watch) Done(err error) {
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
	case w.StoresFault(err):
		changed = w.failed == nil
		w.failed = err
	}
	w.mu.Unlock()
	if changed {
		w.Tell()
	}
}

// StoresFault says whether a write's error is the store's rather than the
// caller's: see store.WriteHealth.Failed. The store's are those
// store.Classify says were not written or have an unknown outcome, and any
// other error the database itself answered (DatabaseError: a table gone,
// corruption): none of them is a decision of the caller's. A caller that
// gave up (its context) says nothing about the store; a deadline of the
// store's own write check is reported by the check itself. The daemon
// answers a failure with a write check at once, which decides: an error
// of one write alone does not make it not ready.
func (w *Watch) StoresFault(err error) bool {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return false
	}
	return store.Classify(err) != store.FailureFault || w.DatabaseError != nil && w.DatabaseError(err)
}
