// Package deadline is where the daemon's timed things are armed: each an
// alarm, a time and what to do then, on one runtime timer of its own
// (time.AfterFunc, reset for each Set and stopped by Stop). The runtime
// keeps every timer in its own heap and wakes only for the earliest, and
// a stopped or unfired timer costs no wake-up, so an idle daemon whose
// alarms are minutes away makes none in between (ADR-0055 had a heap of
// alarms here behind one timer; the idle bench found it bought nothing:
// docs/bench.md, "Runtime timers in place of the clock's heap").
//
// Every alarm of the daemon is on the shared clock (Shared): the
// monitor's next deadline, the store check's, the view's safety net, the
// pusher's resend, systemd's pings. Nothing waits on a ticker of its own.
// A due alarm runs on its timer's goroutine (one of the runtime's making,
// each time), so a slow one (a store check on a hung disk) delays no
// other.
package deadline

import (
	"sync"
	"sync/atomic"
	"time"
)

// Clock counts the alarms made from it that are pending. Its methods and
// its alarms' are safe for concurrent use.
type Clock struct {
	pending atomic.Int64
}

// New returns an empty clock. The daemon uses Shared; a test may make its
// own.
func New() *Clock { return &Clock{} }

var shared = New()

// Shared is the process's clock.
func Shared() *Clock { return shared }

// Alarm is one deadline and what runs at it. It is pending from a Set
// until it fires or is stopped; a fired alarm runs once and waits for
// the next Set.
type Alarm struct {
	c       *Clock
	fn      func()
	mu      sync.Mutex
	timer   *time.Timer // made at the first Set
	at      time.Time
	pending bool
	// C is Signal's channel (nil for a function's alarm).
	C <-chan struct{}
}

// Func returns a stopped alarm that runs fn when it fires (on a
// goroutine of the runtime's timer).
func (c *Clock) Func(fn func()) *Alarm {
	return &Alarm{c: c, fn: fn}
}

// Signal returns a stopped alarm that, when it fires, sends on its C
// without blocking (C has room for one: a signal not yet taken is not
// doubled). It is what a goroutine's select waits on in place of a
// ticker's channel.
func (c *Clock) Signal() *Alarm {
	ch := make(chan struct{}, 1)
	a := c.Func(func() {
		select {
		case ch <- struct{}{}:
		default:
		}
	})
	a.C = ch
	return a
}

// Set (re)arms the alarm to fire after d (at once when d <= 0).
func (a *Alarm) Set(d time.Duration) { a.SetAt(time.Now().Add(d)) }

// SetAt (re)arms the alarm to fire at t.
func (a *Alarm) SetAt(t time.Time) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.setLocked(t)
}

// Earlier arms the alarm to fire at t unless it is already due sooner:
// several reasons to look may share one wake-up.
func (a *Alarm) Earlier(t time.Time) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if !a.pending || t.Before(a.at) {
		a.setLocked(t)
	}
}

// setLocked arms the timer for t; one already armed for t is left alone.
// a.mu is held.
func (a *Alarm) setLocked(t time.Time) {
	if a.pending && t.Equal(a.at) {
		return
	}
	a.at = t
	if !a.pending {
		a.pending = true
		a.c.pending.Add(1)
	}
	if a.timer == nil {
		a.timer = time.AfterFunc(time.Until(t), a.fire)
		return
	}
	a.timer.Reset(time.Until(t))
}

// Stop disarms the alarm: from its return the alarm runs no more until
// it is set again, but a run that began before it may still be going,
// and a Signal's send made before it stays in C (a spurious wake-up,
// which its reader must bear anyway).
func (a *Alarm) Stop() {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.pending {
		a.pending = false
		a.c.pending.Add(-1)
		a.timer.Stop()
	}
}

// Pending says when the alarm fires, and whether it is armed.
func (a *Alarm) Pending() (time.Time, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.at, a.pending
}

// Len is how many of the clock's alarms are pending.
func (c *Clock) Len() int { return int(c.pending.Load()) }

// fire runs the alarm if it is due. A fire that finds it stopped, or set
// again for later (the timer fired as the Set came, or the wall clock
// stepped back), runs nothing; the timer is then set for the later time.
func (a *Alarm) fire() {
	a.mu.Lock()
	if !a.pending {
		a.mu.Unlock()
		return
	}
	if d := time.Until(a.at); d > 0 {
		a.timer.Reset(d)
		a.mu.Unlock()
		return
	}
	a.pending = false
	a.c.pending.Add(-1)
	a.mu.Unlock()
	a.fn()
}
