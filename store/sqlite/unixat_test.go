package sqlite

import (
	"time"

	"watchdog/internal/unixtime"
)

// unixAt is the time of Unix seconds s, the way fixtures name times.
func unixAt(s float64) time.Time { return unixtime.FromSeconds(s) }
