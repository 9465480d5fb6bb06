// Package leader elects, among the daemons sharing one store, the one that
// does the host-less work (ADR-0026, ADR-0029). Each Backend success is
// trusted for Options.Trust only, shorter than any takeover, so two daemons
// never both lead; a stalled leader's late write is compare-and-set, so it
// can only repeat or lose, never apply twice.
package leader

import (
	"context"
	"errors"
	"sync"
	"time"

	"go.uber.org/zap"

	"watchdog/internal/deadline"
)

// ErrLost is wrapped by a Backend's error when leadership is surely gone
// (the lock's connection died): leading stops at once.
var ErrLost = errors.New("leadership lost")

// Backend takes and gives up leadership in the shared store.
type Backend interface {
	// TryLock takes or keeps leadership; true when this daemon holds it now.
	// (false, nil) or an error wrapping ErrLost ends leadership at once; any
	// other error keeps the last success trusted (the store may be slow).
	TryLock(ctx context.Context) (bool, error)
	// Unlock gives leadership up (a clean shutdown).
	Unlock(ctx context.Context) error
}

// Options tune an Elector. Zero values take the defaults.
type Options struct {
	// Every is how often TryLock is called (DefaultEvery).
	Every time.Duration
	// Trust is how long one success makes Leader() true; shorter than any takeover wait.
	Trust time.Duration
	Log   *zap.Logger
	// OnChange hears every change of leadership, from the elector's loop; nil is fine.
	OnChange func(leading bool)
}

// Defaults: a try every 2 s, a success trusted for 6 s, a lease free 10 s
// after its last renewal.
const (
	DefaultEvery = 2 * time.Second
	DefaultTrust = 6 * time.Second
	LeaseTTL     = 10 * time.Second
)

// Elector keeps asking its Backend for leadership and answers Leader().
type Elector struct {
	b     Backend
	every time.Duration
	trust time.Duration
	log   *zap.Logger
	on    func(bool)

	mu      sync.Mutex
	until   time.Time // Leader() is true before this (monotonic clock)
	leading bool      // the last state reported to OnChange and the log
	failing bool      // the last try failed (its warning is said)
}

// New returns an Elector over b; Run or Start makes it try.
func New(b Backend, o Options) *Elector {
	e := &Elector{b: b, every: o.Every, trust: o.Trust, log: o.Log, on: o.OnChange}
	if e.every <= 0 {
		e.every = DefaultEvery
	}
	if e.trust <= 0 {
		e.trust = DefaultTrust
	}
	if e.log == nil {
		e.log = zap.NewNop()
	}
	return e
}

// Leader reports whether this daemon leads now: its last success is less
// than Trust old.
func (e *Elector) Leader() bool {
	if e == nil {
		return false
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	return time.Now().Before(e.until)
}

// Try asks the backend once and returns whether this daemon leads now.
func (e *Elector) Try(ctx context.Context) bool {
	tctx, cancel := context.WithTimeout(ctx, e.trust)
	defer cancel()
	start := time.Now()
	ok, err := e.b.TryLock(tctx)
	lost := errors.Is(err, ErrLost) || (!ok && err == nil)
	e.mu.Lock()
	// One warning per run of failures, not one per try.
	first := err != nil && !e.failing
	e.failing = err != nil
	now := time.Now()
	switch {
	case ok && err == nil:
		// From before the call: the lease or the proof started no later.
		e.until = start.Add(e.trust)
	case lost && e.until.After(now):
		e.until = now
	}
	leading := now.Before(e.until)
	changed := leading != e.leading
	e.leading = leading
	until := e.until
	e.mu.Unlock()
	switch {
	case errors.Is(err, ErrLost):
		e.log.Warn("leadership: lost with the store connection holding it", zap.Error(err))
	case first:
		e.log.Warn("leadership: cannot reach the store; leading only while the last success is trusted (said once until it answers)", zap.Error(err))
	}
	if changed {
		// now is no later than Leader()'s first true; until no earlier than its last.
		e.report(leading, now, until)
	}
	return leading
}

// report logs a change of leadership with the instants that bound it, so a
// fleet's logs show that no two daemons led at once.
func (e *Elector) report(leading bool, from, until time.Time) {
	e.reportWhy(leading, from, until, "another daemon does the host-less work")
}

// reportWhy is report with why a leadership ended.
func (e *Elector) reportWhy(leading bool, from, until time.Time, why string) {
	if leading {
		e.log.Info("leading: this daemon does the host-less work", zap.String("from", from.Format(time.RFC3339Nano)))
	} else {
		e.log.Info("not leading: "+why, zap.String("until", until.Format(time.RFC3339Nano)))
	}
	if e.on != nil {
		e.on(leading)
	}
}

// Run tries every Every until ctx ends, then gives leadership up.
func (e *Elector) Run(ctx context.Context) {
	// Set before each try, so a slow try does not shift the next (ADR-0055).
	tick := deadline.Shared().Signal()
	defer tick.Stop()
	for {
		tick.Set(e.every)
		e.Try(ctx)
		select {
		case <-ctx.Done():
			e.Stop()
			return
		case <-tick.C:
		}
	}
}

// Start runs Run in a goroutine; stop ends it and waits for the hand-over.
func (e *Elector) Start(ctx context.Context) (stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		e.Run(ctx)
	}()
	return func() {
		cancel()
		<-done
	}
}

// Stop gives leadership up now: Leader() is false at once, and the backend
// is told so another daemon need not wait for expiry.
func (e *Elector) Stop() {
	e.mu.Lock()
	was := e.leading
	until := time.Now()
	if e.until.Before(until) {
		until = e.until
	}
	e.until, e.leading = time.Time{}, false
	e.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := e.b.Unlock(ctx); err != nil {
		e.log.Warn("leadership: could not give it up; another daemon takes over when it expires", zap.Error(err))
	}
	if was {
		e.reportWhy(false, time.Time{}, until, "this daemon stops (another daemon, if any, takes the host-less work)")
	}
}
