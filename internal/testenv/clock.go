package testenv

import (
	"sync"
	"time"
)

// Clock is a settable clock for code that takes a `Now func() time.Time`
// (the write path, the reaper, the API, metrics). It is safe to read from
// the goroutines the code under test starts while the test moves it.
type Clock struct {
	mu sync.Mutex
	t  time.Time
}

// NewClock is a Clock standing at t. It keeps t as given: a test that
// compares the clock with a time read back from the store starts it at a
// whole second (or truncates to unixtime.Precision) itself.
func NewClock(t time.Time) *Clock { return &Clock{t: t} }

// Now is the clock's time; pass the method value as a Now func.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

// Advance moves the clock on by d (back, for a negative d).
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// Set puts the clock at t.
func (c *Clock) Set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = t
}
