// Package writewatch records both drivers' write transactions
// (store.WriteHealth) and signals health changes (HealthEvents).
package writewatch

import (
	"context"
	"errors"
	"sync"
	"time"

	"watchdog/store"
)

// Watch records a store's write outcomes and tells a reader when its health
// may have changed. Both drivers embed one; the zero value is ready to use.
type Watch struct {
	// DatabaseError reports an error the database itself answered (a missing
	// table, corruption): the store's fault. Set it before the first write.
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

// HealthEvents returns a channel told whenever the store's health may have
// changed. One buffered slot: a burst is told once.
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

// Done records the end of a write begun with Start, with its classified err.
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
// caller's (store.WriteHealth.Failed); a caller's cancelled context is not.
func (w *Watch) StoresFault(err error) bool {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return false
	}
	return store.Classify(err) != store.FailureFault || w.DatabaseError != nil && w.DatabaseError(err)
}
