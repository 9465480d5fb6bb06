// Package deadline is the process's one timer: a heap of alarms, each a
// time and what to do then, behind a single runtime timer that is reset to
// the earliest (ADR-0055). Every timed thing of the daemon is an alarm on
// the shared clock (Shared): the monitor's next deadline, the store
// check's, the view's safety net, the pusher's resend, systemd's pings.
// Nothing waits on a ticker of its own, so an idle daemon whose alarms are
// minutes away makes no wake-up in between, and what is due is in one
// place to read.
//
// The clock has no goroutine of its own: its timer is a time.AfterFunc,
// whose callback (a goroutine of the runtime's making, each time) pops
// what is due and runs it; several due at once run on goroutines of their
// own, so a slow one (a store check on a hung disk) delays no other.
package deadline

import (
	"container/heap"
	"sync"
	"time"
)

// Clock holds alarms and one timer set to the earliest of them. Its
// methods and its alarms' are safe for concurrent use.
type Clock struct {
	mu    sync.Mutex
	h     alarms
	timer *time.Timer
	// armed is when timer fires (zero: stopped): a Set that moves no
	// earliest deadline leaves the timer alone.
	armed time.Time
}

// New returns an empty clock. The daemon uses Shared; a test may make its
// own.
func New() *Clock { return &Clock{} }

var shared = New()

// Shared is the process's clock: one timer for every deadline.
func Shared() *Clock { return shared }

// Alarm is one deadline of a clock and what runs at it. It is pending
// from a Set until it fires or is stopped; a fired alarm runs once and
// waits for the next Set.
type Alarm struct {
	c     *Clock
	fn    func()
	at    time.Time
	index int // in the heap; -1 when not pending
	// C is Signal's channel (nil for a function's alarm).
	C <-chan struct{}
}

// Func returns a stopped alarm that runs fn when it fires (on the
// clock's timer goroutine, or on one of its own when more than one alarm
// is due at once).
func (c *Clock) Func(fn func()) *Alarm {
	return &Alarm{c: c, fn: fn, index: -1}
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
	a.c.mu.Lock()
	defer a.c.mu.Unlock()
	a.setLocked(t)
}

// Earlier arms the alarm to fire at t unless it is already due sooner:
// several reasons to look may share one wake-up.
func (a *Alarm) Earlier(t time.Time) {
	a.c.mu.Lock()
	defer a.c.mu.Unlock()
	if a.index < 0 || t.Before(a.at) {
		a.setLocked(t)
	}
}

// setLocked places the alarm at t and the timer at the earliest. c.mu is
// held.
func (a *Alarm) setLocked(t time.Time) {
	c := a.c
	a.at = t
	if a.index >= 0 {
		heap.Fix(&c.h, a.index)
	} else {
		heap.Push(&c.h, a)
	}
	c.arm()
}

// Stop disarms the alarm. One that was already popped to run may still
// run once (a Signal's is then a spurious wake-up, which its reader must
// bear anyway).
func (a *Alarm) Stop() {
	c := a.c
	c.mu.Lock()
	defer c.mu.Unlock()
	if a.index >= 0 {
		heap.Remove(&c.h, a.index)
		c.arm()
	}
}

// Pending says when the alarm fires, and whether it is armed.
func (a *Alarm) Pending() (time.Time, bool) {
	a.c.mu.Lock()
	defer a.c.mu.Unlock()
	return a.at, a.index >= 0
}

// Len is how many alarms are pending.
func (c *Clock) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.h)
}

// arm sets the timer to the earliest alarm, or stops it when none is
// pending. c.mu is held.
func (c *Clock) arm() {
	if len(c.h) == 0 {
		if !c.armed.IsZero() {
			c.timer.Stop()
			c.armed = time.Time{}
		}
		return
	}
	next := c.h[0].at
	if next.Equal(c.armed) {
		return
	}
	c.armed = next
	d := time.Until(next)
	if c.timer == nil {
		c.timer = time.AfterFunc(d, c.fire)
		return
	}
	c.timer.Reset(d)
}

// fire runs every alarm that is due and sets the timer to the next.
func (c *Clock) fire() {
	c.mu.Lock()
	now := time.Now()
	var due []func()
	for len(c.h) > 0 && !c.h[0].at.After(now) {
		a := heap.Pop(&c.h).(*Alarm)
		due = append(due, a.fn)
	}
	c.armed = time.Time{}
	if len(c.h) > 0 {
		c.arm()
	}
	c.mu.Unlock()
	// More than one due: each on its own goroutine, so a slow one
	// delays none of the others; one alone runs here.
	for i, fn := range due {
		if i == len(due)-1 {
			fn()
		} else {
			go fn()
		}
	}
}

// alarms is a min-heap by time.
type alarms []*Alarm

func (h alarms) Len() int           { return len(h) }
func (h alarms) Less(i, j int) bool { return h[i].at.Before(h[j].at) }
func (h alarms) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].index, h[j].index = i, j
}

func (h *alarms) Push(x any) {
	a := x.(*Alarm)
	a.index = len(*h)
	*h = append(*h, a)
}

func (h *alarms) Pop() any {
	old := *h
	a := old[len(old)-1]
	old[len(old)-1] = nil
	a.index = -1
	*h = old[:len(old)-1]
	return a
}
