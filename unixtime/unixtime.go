// Package unixtime is where watchdog's time.Time values become Unix seconds
// and back: the store's REAL columns and the JSON wire both carry a number
// of seconds, and both convert through Seconds and FromSeconds so the two
// agree to the microsecond. Everything between those boundaries uses
// time.Time, with the zero time meaning "not recorded" (stored as NULL,
// written as 0 or left out).
package unixtime

import (
	"encoding/json"
	"math"
	"strconv"
	"time"
)

// Precision is how finely Seconds and FromSeconds keep a time (see
// Seconds for why): a time truncated to it survives the round trip
// through the store or the wire unchanged.
const Precision = time.Microsecond

// Seconds is t as Unix seconds, to the microsecond; the zero time is 0.
//
// Microseconds are the finest unit a float64 of today's Unix seconds
// holds (its step is about 0.24µs until 2038, 0.48µs until 2106), so
// FromSeconds(Seconds(t)) gives t back to the microsecond; finer would not
// round-trip through a REAL column or a JSON number. Nothing needs more:
// process start times are known to a clock tick (10ms) and compared within
// a second (probe's startTimeTolerance), and ordering events a microsecond
// apart is beyond what the wall clock promises anyway.
func Seconds(t time.Time) float64 {
	if t.IsZero() {
		return 0
	}
	return float64(t.UnixMicro()) / 1e6
}

// FromSeconds is the time s Unix seconds name, to the microsecond; 0 is the
// zero time (not recorded).
func FromSeconds(s float64) time.Time {
	if s == 0 {
		return time.Time{}
	}
	// Splitting off the whole seconds keeps the rounding to the fraction,
	// so the microsecond Seconds wrote comes back exactly.
	whole, frac := math.Modf(s)
	return time.Unix(int64(whole), int64(math.Round(frac*1e6))*1e3)
}

// Time is a time.Time that JSON writes and reads as Unix seconds (a
// number), the wire's one time format. The zero Time is written as 0 and 0
// reads back as the zero Time; a field tagged omitzero leaves it out, and
// a pointer field writes null for nil, the way the float64 fields they
// replace did with omitempty and *float64.
type Time struct{ time.Time }

// Of wraps t for the wire.
func Of(t time.Time) Time { return Time{t} }

// MarshalJSON writes the Unix seconds as a JSON number.
func (t Time) MarshalJSON() ([]byte, error) {
	return strconv.AppendFloat(nil, Seconds(t.Time), 'f', -1, 64), nil
}

// UnmarshalJSON reads a JSON number of Unix seconds; null leaves t as it
// is, as for any JSON value.
func (t *Time) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		return nil
	}
	var s float64
	if err := json.Unmarshal(b, &s); err != nil {
		return err
	}
	t.Time = FromSeconds(s)
	return nil
}

// Duration is a duration given as a number of seconds (timeout_seconds and
// the like, on the wire and in the store), rounded to the nanosecond so
// that d.Seconds() gives the same number back. Beyond time.Duration's
// range (about 292 years) it saturates rather than wrapping round to a
// negative value that would read as a different mistake.
func Duration(seconds float64) time.Duration {
	ns := math.Round(seconds * float64(time.Second))
	switch {
	case ns >= math.MaxInt64:
		return math.MaxInt64
	case ns <= math.MinInt64:
		return math.MinInt64
	}
	return time.Duration(ns)
}
