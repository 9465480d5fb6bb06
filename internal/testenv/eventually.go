package testenv

import (
	"testing"
	"time"
)

// Eventually polls cond until it holds, and fails t if it does not within
// timeout, saying what it waited for and the detail cond last gave (what
// it saw instead). It is for waits on what runs outside the test's
// control: a real process, the real binary, a daemon's socket. A wait on
// the test's own timers and goroutines belongs in a testing/synctest
// bubble instead.
//
// Polls start at 10ms and back off to 100ms, so a quick condition is seen
// quickly and a slow one (that runs the CLI, say) is not run in a tight
// loop.
func Eventually(t testing.TB, what string, timeout time.Duration, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	pause := 10 * time.Millisecond
	for {
		ok, detail := cond()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("waited %s for %s; last seen: %s", timeout, what, detail)
		}
		time.Sleep(pause)
		pause = min(2*pause, 100*time.Millisecond)
	}
}
