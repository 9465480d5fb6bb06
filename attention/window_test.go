package attention

import (
	"testing"
	"time"
)

// windowCases pin the failure window's rule: an entity with an outcome
// ages out when it got there (ended_at, else lifecycle_at, else
// updated_at) before now - window; exactly at the edge it stays.
var windowCases = []struct {
	name                      string
	outcome                   string
	ended, lifecycle, updated float64 // Unix seconds, 0 = unset
	window                    time.Duration
	agedOut                   bool
}{
	{"open never ages", "", 1, 1, 1, time.Hour, false},
	{"ended inside", "failed", 99_000, 1, 1, time.Hour, false},
	{"ended at the edge", "failed", 96_400, 1, 1, time.Hour, false},
	{"ended a microsecond past the edge", "failed", 96_399.999999, 1, 1, time.Hour, true},
	{"ended wins over a recent lifecycle_at", "failed", 1, 99_999, 99_999, time.Hour, true},
	{"lifecycle_at without ended_at", "failed", 0, 99_000, 1, time.Hour, false},
	{"updated_at last", "failed", 0, 0, 10, time.Hour, true},
	{"0 is the default window", "failed", 100_000 - 86_400, 0, 0, 0, false},
	{"0 is the default window, past it", "failed", 100_000 - 86_401, 0, 0, 0, true},
}

func TestFailureWindowRule(t *testing.T) {
	now := unixAt(100_000)
	for _, c := range windowCases {
		got := AgedOut(c.outcome, "", unixAt(c.ended), unixAt(c.lifecycle), unixAt(c.updated), now, c.window)
		if got != c.agedOut {
			t.Errorf("%s: AgedOut = %v, want %v", c.name, got, c.agedOut)
		}
		// Since is the cut-off the store's queries take: "aged out" is
		// "got there before Since".
		if c.outcome != "" && c.ended != 0 && unixAt(c.ended).Before(Since(now, c.window)) != c.agedOut {
			t.Errorf("%s: Since disagrees with AgedOut", c.name)
		}
	}
}
