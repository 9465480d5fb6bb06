// Package unixtime is where watchdog's time.Time values become Unix seconds
// and back: the store's REAL columns and the JSON wire both carry a number
// of seconds, and both convert through Seconds and FromSeconds so the two
// agree to the microsecond. Everything between those boundaries uses
// time.Time, with the zero time meaning "not recorded" (stored as NULL,
// written as 0 or left out).
package unixtime

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"time"
)

// MaxSeconds bounds the Unix seconds Seconds and FromSeconds convert
// exactly (either sign): beyond it t.UnixMicro overflows int64 (about
// the year 294,000). A number past it is not a time watchdog can keep:
// Checked refuses it and FromSeconds saturates to it, never wrapping
// round to another time or to "not recorded". What a time on the wire
// may be is narrower still (transitions.TimeRange).
const MaxSeconds = math.MaxInt64/1_000_000 - 1

// ErrOutOfRange marks a number of seconds beyond MaxSeconds (or not a
// number at all).
var ErrOutOfRange = errors.New("beyond the times Unix seconds can name here")

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
	if u := t.Unix(); u > MaxSeconds || u < -MaxSeconds {
		// UnixMicro would overflow: the whole seconds are as near as a
		// float64 gets out there anyway.
		return float64(u)
	}
	return float64(t.UnixMicro()) / 1e6
}

// FromSeconds is the time s Unix seconds name, to the microsecond; 0 is the
// zero time (not recorded).
//
// A number beyond ±MaxSeconds saturates to it (NaN reads as 0): a
// conversion never wraps round. Checked is the same conversion refusing
// such a number instead, for input.
func FromSeconds(s float64) time.Time {
	switch {
	case s == 0 || math.IsNaN(s):
		return time.Time{}
	case s > MaxSeconds:
		s = MaxSeconds
	case s < -MaxSeconds:
		s = -MaxSeconds
	}
	// Splitting off the whole seconds keeps the rounding to the fraction,
	// so the microsecond Seconds wrote comes back exactly.
	whole, frac := math.Modf(s)
	return time.Unix(int64(whole), int64(math.Round(frac*1e6))*1e3)
}

// Checked is FromSeconds refusing what it would saturate: a number
// beyond ±MaxSeconds, infinite or NaN is ErrOutOfRange.
func Checked(s float64) (time.Time, error) {
	if math.IsNaN(s) || s > MaxSeconds || s < -MaxSeconds {
		return time.Time{}, fmt.Errorf("%w: %s", ErrOutOfRange, strconv.FormatFloat(s, 'g', -1, 64))
	}
	return FromSeconds(s), nil
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
// is, as for any JSON value. A number beyond ±MaxSeconds is an error
// quoting it as sent (ErrOutOfRange), never a time it does not name.
func (t *Time) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		return nil
	}
	var s float64
	if err := json.Unmarshal(b, &s); err != nil {
		return err
	}
	at, err := Checked(s)
	if err != nil {
		return fmt.Errorf("%w: %s", ErrOutOfRange, b)
	}
	t.Time = at
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
