package transitions

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"watchdog/internal/unixtime"
)

// The ranges of the numbers watchdog accepts, in one place for the wire,
// the CLI and the write path (docs/rules.md, ADR-0035). A number outside its
// range is refused whole, quoted as sent; nothing is written.
const (
	// MaxPID is the largest pid Linux hands out (PID_MAX_LIMIT); 0 is "no pid".
	MaxPID = 4194304
	// ClockSkew is how far in the future a time may be: another host's clock
	// may drift, but not by a unit mistake.
	ClockSkew = time.Hour
	// MaxTimeout bounds timeout_seconds and exec --timeout: beyond it, a typo.
	MaxTimeout = 365 * 24 * time.Hour
	// MaxSnooze bounds a snooze's end; longer is a dismissal.
	MaxSnooze = 365 * 24 * time.Hour
	// MaxElapsed bounds elapsed_seconds: larger is a unit mistake, and would
	// saturate time.Duration.
	MaxElapsed = 36525 * 24 * time.Hour
	// MaxBytes bounds a size: 2^53−1, exact in every JSON reader.
	MaxBytes = 1<<53 - 1
)

// Epoch is the earliest time accepted on the wire: anything before it is a
// unit or arithmetic mistake (0 means "not recorded" where allowed).
var Epoch = time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)

// ErrOutOfRange marks a number outside its Range; it is also ErrOverLimit.
var ErrOutOfRange = errors.New("out of range")

// Range is the interval a number must fall in: [Min, Max], or (Min, Max]
// when MinOpen; with ZeroIsNone, 0 ("not given") is accepted too.
type Range struct {
	Min, Max   float64
	MinOpen    bool
	ZeroIsNone bool
	// Unit is what the number counts; empty for a pid.
	Unit string
	// MinNote and MaxNote say what a bound is, beside its number.
	MinNote, MaxNote string
}

// Contains says whether v is in r. NaN is in no range.
func (r Range) Contains(v float64) bool {
	if v == 0 && r.ZeroIsNone {
		return true
	}
	if r.MinOpen && v <= r.Min || !r.MinOpen && v < r.Min {
		return false
	}
	return v <= r.Max // false for NaN too
}

// String says the range in words, for an error a person acts on.
func (r Range) String() string {
	var b strings.Builder
	if r.Unit != "" {
		b.WriteString(r.Unit + " ")
	}
	if r.MinOpen {
		b.WriteString("after ")
	} else {
		b.WriteString("from ")
	}
	b.WriteString(num(r.Min))
	if r.MinNote != "" {
		b.WriteString(" (" + r.MinNote + ")")
	}
	if r.MinOpen {
		b.WriteString(" up to ")
	} else {
		b.WriteString(" to ")
	}
	b.WriteString(num(r.Max))
	if r.MaxNote != "" {
		b.WriteString(" (" + r.MaxNote + ")")
	}
	if r.ZeroIsNone {
		b.WriteString(", or 0 for none")
	}
	return b.String()
}

// num writes a bound without an exponent, to compare with what was sent.
func num(v float64) string {
	if v == math.Trunc(v) && math.Abs(v) < 1e21 {
		return strconv.FormatFloat(v, 'f', -1, 64)
	}
	return strconv.FormatFloat(v, 'f', 3, 64)
}

// Check refuses v outside r, naming field and quoting sent as given, never
// a re-rendering of the float ("1e18", not "1e+18").
func (r Range) Check(field, sent string, v float64) error {
	if r.Contains(v) {
		return nil
	}
	return &RangeError{Field: field, Sent: sent, Range: r}
}

// RangeError is a number outside its range; it is ErrOutOfRange and
// ErrOverLimit.
type RangeError struct {
	Field, Sent string
	Range       Range
}

func (e *RangeError) Error() string {
	return fmt.Sprintf("%s: %s is out of range: want %s", e.Field, e.Sent, e.Range)
}

// Unwrap makes a RangeError both ErrOutOfRange and ErrOverLimit.
func (e *RangeError) Unwrap() []error { return []error{ErrOutOfRange, ErrOverLimit} }

// PIDRange is the range of pid and supervisor_pid.
func PIDRange() Range {
	return Range{Min: 1, Max: MaxPID, ZeroIsNone: true, Unit: "a pid", MaxNote: "PID_MAX_LIMIT"}
}

// TimeRange is the range of a time on the wire at now: from Epoch to now +
// ClockSkew, or 0 for "not recorded".
func TimeRange(now time.Time) Range {
	return Range{
		Min: unixtime.Seconds(Epoch), Max: math.Floor(unixtime.Seconds(now.Add(ClockSkew))), ZeroIsNone: true,
		Unit: "Unix seconds", MinNote: Epoch.Format(time.RFC3339), MaxNote: "now + " + durationNote(ClockSkew) + " of clock skew",
	}
}

// TimeoutRange is the range of timeout_seconds: from one second (the
// enforcement's resolution) to MaxTimeout, or 0 for none.
func TimeoutRange() Range {
	return Range{Min: 1, Max: MaxTimeout.Seconds(), ZeroIsNone: true, Unit: "seconds", MaxNote: durationNote(MaxTimeout)}
}

// ElapsedRange is the range of a transition's elapsed_seconds: up to
// MaxElapsed, or 0 for "since the start".
func ElapsedRange() Range {
	return Range{Min: 0, MinOpen: true, Max: MaxElapsed.Seconds(), ZeroIsNone: true, Unit: "seconds", MaxNote: durationNote(MaxElapsed)}
}

// SnoozeRange is the range of a snooze's until at now: after now, at most
// MaxSnooze ahead.
func SnoozeRange(now time.Time) Range {
	return Range{
		Min: unixtime.Seconds(now), MinOpen: true, Max: math.Floor(unixtime.Seconds(now.Add(MaxSnooze))),
		Unit: "Unix seconds", MinNote: "now", MaxNote: "now + " + durationNote(MaxSnooze),
	}
}

// SnoozeForRange is the range of `watchdog snooze --for`, in seconds.
func SnoozeForRange() Range {
	return Range{Min: 0, MinOpen: true, Max: MaxSnooze.Seconds(), Unit: "seconds", MaxNote: durationNote(MaxSnooze)}
}

// BytesRange is the range of a size (an artifact's min_bytes).
func BytesRange() Range {
	return Range{Min: 0, Max: MaxBytes, Unit: "bytes", MaxNote: "2^53-1"}
}

// durationNote writes d in days or hours when whole.
func durationNote(d time.Duration) string {
	switch {
	case d%(24*time.Hour) == 0:
		return strconv.FormatInt(int64(d/(24*time.Hour)), 10) + " days"
	case d%time.Hour == 0:
		return strconv.FormatInt(int64(d/time.Hour), 10) + "h"
	}
	return d.String()
}
