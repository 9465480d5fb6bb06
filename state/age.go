package state

import (
	"strconv"
	"time"
)

// FormatAge renders an age the way operators read it in the CLI's tables:
// whole seconds under a minute, then minutes, hours, days (42s, 7m, 3h,
// 2d), each truncated; under a second (or negative) is 0s. The probe's
// evidence text keeps its own, finer format (90s, 71m, as in the state model's
// "last heartbeat 71m ago"), stored in reasons: changing either would
// change what operators and stored evidence read.
func FormatAge(d time.Duration) string {
	var n int64
	var unit string
	switch {
	case d < time.Second:
		return "0s"
	case d < time.Minute:
		n, unit = int64(d/time.Second), "s"
	case d < time.Hour:
		n, unit = int64(d/time.Minute), "m"
	case d < 24*time.Hour:
		n, unit = int64(d/time.Hour), "h"
	default:
		n, unit = int64(d/(24*time.Hour)), "d"
	}
	return strconv.FormatInt(n, 10) + unit
}
