// Package leader elects, among the daemons sharing one store, the one that
// does the host-less work: teams, shows, plays' dependency rules, host-less
// schedules, and judging hosts whose daemon fell silent. Host-bound work
// (probing, enforcing and reaping a host's processes) never needs it: each
// host's daemon does its own.
//
// An Elector asks its Backend every few seconds to take or keep
// leadership, and trusts one success for a bounded time only (Options.Trust),
// shorter than the time after which another daemon may take over, so two
// daemons never both answer Leader() true on agreeing clocks. The SQLite
// store's backend is a lease row (Lease); a PostgreSQL backend holding an
// advisory lock on its own connection fits the same interface (TryLock
// re-checks, by a round trip on that connection, that the lock is held,
// and a daemon that has just taken it waits one Trust before it claims
// it, the longest its dead or cut-off predecessor may still believe it
// leads). A backend that answers "not held" ends leadership at once.
//
// What it cannot promise, said so that nobody relies on it: a leader that
// stalls between its Leader() check and a write may write after its trust
// ran out. The writes of host-less work are compare-and-set transitions
// (or observations guarded by the row's sequence), so such a late write
// can only repeat or lose to the new leader's, never apply twice.
package leader

import (
	"context"
	"errors"
	"sync"
	"time"

	"go.uber.org/zap"

	"watchdog/internal/deadline"
)

// ErrLost is wrapped by a Backend's error when leadership is gone for sure
// (the PostgreSQL lock's connection died): the Elector stops leading at
// once instead of trusting its last success until it runs out.
var ErrLost = errors.New("leadership lost")

// Backend takes and gives up leadership in the shared store.
type Backend interface {
	// TryLock takes leadership, or keeps it when already held; true when
	// this daemon holds it now. Called every Options.Every, with a
	// deadline of Options.Trust. (false, nil) means another daemon holds
	// it, and ends this one's leadership at once, as does an error
	// wrapping ErrLost; any other error keeps the last success trusted
	// until it runs out (the store may only be slow).
	TryLock(ctx context.Context) (bool, error)
	// Unlock gives leadership up (a clean shutdown), so that another
	// daemon takes it at its next try.
	Unlock(ctx context.Context) error
}

// Options tune an Elector. Zero values take the defaults.
type Options struct {
	// Every is how often TryLock is called (DefaultEvery).
	Every time.Duration
	// Trust is how long one successful TryLock makes Leader() true
	// (DefaultTrust); it must be shorter than the time another daemon
	// waits before taking over (a lease's TTL; for a lock freed at once,
	// the new holder's settle, which must be at least Trust).
	Trust time.Duration
	Log   *zap.Logger
	// OnChange hears every change of leadership (metrics, logs); nil is
	// fine. It is called from the elector's loop.
	OnChange func(leading bool)
}

// Defaults: a try every two seconds, a success trusted for six, a lease
// that others may take ten seconds after its last renewal. A leader that
// stops cleanly hands over within Every; one killed, within LeaseTTL+Every.
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

// Leader reports whether this daemon leads now: its last successful try
// is less than Trust old.
func (e *Elector) Leader() bool {
	if e == nil {
		return false
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	return time.Now().Before(e.until)
}

// Try asks the backend once and records the answer; Run calls it every
// Every. It returns whether this daemon leads afterwards.
func (e *Elector) Try(ctx context.Context) bool {
	tctx, cancel := context.WithTimeout(ctx, e.trust)
	defer cancel()
	start := time.Now()
	ok, err := e.b.TryLock(tctx)
	lost := errors.Is(err, ErrLost) || (!ok && err == nil)
	e.mu.Lock()
	// One warning per run of failures: a store down for an hour is not
	// thousands of lines at a fast try period.
	first := err != nil && !e.failing
	e.failing = err != nil
	now := time.Now()
	switch {
	case ok && err == nil:
		// Counted from before the call: the backend's own clock started
		// the lease, or the round trip proving the lock, no later.
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
		// Leader() answers true only after the lock is released, so now
		// is no later than its first true; until is no earlier than its
		// last.
		e.report(leading, now, until)
	}
	return leading
}

// report logs a change of leadership with the instants that bound it: a
// leadership begins no earlier than "from" and ends no later than
// "until", so the logs of a fleet show that no two daemons led at once.
func (e *Elector) report(leading bool, from, until time.Time) {
	e.reportWhy(leading, from, until, "another daemon does the host-less work")
}

// reportWhy is report with the reason a leadership ended (every line that
// ends one starts "not leading: ").
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

// Run tries at once and then every Every until ctx ends; then it gives
// leadership up (within a few seconds, on a fresh context) and returns.
func (e *Elector) Run(ctx context.Context) {
	// The period is an alarm on the process's shared clock (ADR-0055),
	// set before each try so that a slow try does not shift the next.
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

// Start runs Run in a goroutine and returns the function that stops it
// and waits for the hand-over.
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

// Stop gives leadership up now: Leader() answers false at once, and the
// backend is told so another daemon need not wait for expiry.
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
