// Package unixtime converts time.Time to Unix seconds and back, the one
// conversion for the store's REAL columns and the JSON wire (ADR-0001). The
// zero time means "not recorded" (NULL, or 0 on the wire).
package unixtime

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"time"
)

// MaxSeconds bounds the Unix seconds converted exactly (either sign): beyond it
// t.UnixMicro overflows. Checked refuses past it, FromSeconds saturates (ADR-0035).
const MaxSeconds = math.MaxInt64/1_000_000 - 1

// ErrOutOfRange marks a number of seconds beyond MaxSeconds (or not a
// number at all).
var ErrOutOfRange = errors.New("beyond the times Unix seconds can name here")

// Precision is how finely Seconds and FromSeconds keep a time: a time truncated
// to it survives the round trip through the store or the wire unchanged.
const Precision = time.Microsecond

// Seconds is t as Unix seconds, to the microsecond (the finest a float64 of
// today's seconds round-trips); the zero time is 0.
func Seconds(t time.Time) float64 {
	if t.IsZero() {
		return 0
	}
	if u := t.Unix(); u > MaxSeconds || u < -MaxSeconds {
		// UnixMicro would overflow; whole seconds are as near as a float64 gets.
		return float64(u)
	}
	return float64(t.UnixMicro()) / 1e6
}

// FromSeconds is the time s Unix seconds name, to the microsecond; 0 is the zero
// time. Beyond ±MaxSeconds it saturates, never wrapping (NaN reads as 0).
func FromSeconds(s float64) time.Time {
	switch {
	case s == 0 || math.IsNaN(s):
		return time.Time{}
	case s > MaxSeconds:
		s = MaxSeconds
	case s < -MaxSeconds:
		s = -MaxSeconds
	}
	// Rounding only the fraction gives back exactly the microsecond Seconds wrote.
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

// Time is a time.Time that JSON writes and reads as Unix seconds, the wire's one
// time format; the zero Time is 0 (omitzero leaves it out).
type Time struct{ time.Time }

// Of wraps t for the wire.
func Of(t time.Time) Time { return Time{t} }

// MarshalJSON writes the Unix seconds as a JSON number.
func (t Time) MarshalJSON() ([]byte, error) {
	return strconv.AppendFloat(nil, Seconds(t.Time), 'f', -1, 64), nil
}

// UnmarshalJSON reads a JSON number of Unix seconds; null leaves t as it is, and
// a number beyond ±MaxSeconds is ErrOutOfRange, quoted as sent.
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

// Duration is a number of seconds as a time.Duration, rounded to the nanosecond
// so d.Seconds() gives it back; out of range it saturates rather than wrapping.
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
