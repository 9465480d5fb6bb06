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

// The ranges of the numbers watchdog accepts (times, durations, pids and
// sizes), in one place: the wire's documents (wire.DecodeAt), the CLI's
// flags that feed them and the write path all check against these, and
// docs/rules.md lists them in one table. A number outside its range is
// refused whole (ErrOutOfRange, a kind of ErrOverLimit: HTTP 422
// over_limit, a non-zero exit), naming the field and the range and
// quoting the value as it was sent; nothing is written. Before these
// ranges an out-of-range number was silently changed on its way to the
// store (pid_start_time 1e18 stored as 2003764205206.8967, 9.3e18 dropped,
// timeout_seconds 1e18 saturated to 9223372036.854776).
const (
	// MaxPID is the largest pid Linux hands out (PID_MAX_LIMIT on 64-bit,
	// 2^22); 0 means "no pid".
	MaxPID = 4194304
	// ClockSkew is how far in the future a time may be: a time sent by
	// another host of a fleet is read by its clock, not ours, and an hour
	// is far more than NTP lets two clocks drift while still refusing a
	// unit mistake (milliseconds for seconds is 30,000 years ahead).
	ClockSkew = time.Hour
	// MaxTimeout bounds timeout_seconds and exec --timeout: a year. A
	// timeout is a promise about one run; beyond a year it is a typo.
	MaxTimeout = 365 * 24 * time.Hour
	// MaxSnooze bounds how far ahead a snooze may end (until, --for): a
	// year. Hiding an item for longer is a dismissal, which has no end.
	MaxSnooze = 365 * 24 * time.Hour
	// MaxElapsed bounds a transition's elapsed_seconds: 100 years (36,525
	// days). No run watchdog sees lasts a century; a larger number is a
	// unit mistake, and far larger ones would saturate time.Duration.
	MaxElapsed = 36525 * 24 * time.Hour
	// MaxBytes bounds a size (an artifact's min_bytes): 2^53−1, the
	// largest integer every JSON reader (JavaScript's included) holds
	// exactly, 8 PiB.
	MaxBytes = 1<<53 - 1
)

// Epoch is the earliest time accepted on the wire (2000-01-01 UTC): no
// process, heartbeat or schedule fire watchdog sees began before it, and
// a time before it is a unit or an arithmetic mistake (0 itself means
// "not recorded" where a field allows it).
var Epoch = time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)

// ErrOutOfRange marks a number outside its Range. It is also
// ErrOverLimit, so it is one cause, over_limit (HTTP 422), to every
// caller.
var ErrOutOfRange = errors.New("out of range")

// Range is the interval a number must fall in: [Min, Max], or (Min, Max]
// when MinOpen; with ZeroIsNone, 0 ("not given") is accepted too.
type Range struct {
	Min, Max   float64
	MinOpen    bool
	ZeroIsNone bool
	// Unit is what the number counts ("Unix seconds", "seconds",
	// "bytes"; empty for a pid).
	Unit string
	// MinNote and MaxNote say what a bound is, beside its number
	// ("2000-01-01T00:00:00Z", "now + 1h of clock skew").
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

// String says the range in words, for an error a person acts on:
// "Unix seconds from 946684800 (2000-01-01T00:00:00Z) to 1795000000 (now +
// 1h of clock skew), or 0 for none".
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

// num writes a bound as a plain number: whole seconds and bytes without
// an exponent, so a person can compare it with what was sent.
func num(v float64) string {
	if v == math.Trunc(v) && math.Abs(v) < 1e21 {
		return strconv.FormatFloat(v, 'f', -1, 64)
	}
	return strconv.FormatFloat(v, 'f', 3, 64)
}

// Check refuses v outside r, naming field and quoting sent, the value
// exactly as it was given (a JSON number's literal, a flag's text), never
// a re-rendering of the float that may read differently ("1e18", not
// "1e+18").
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

// TimeRange is the range of a time on the wire at now (a process's or a
// supervisor's start time, a schedule's last fire, evidence fetched_at):
// from Epoch to now + ClockSkew, or 0 for "not recorded".
func TimeRange(now time.Time) Range {
	return Range{
		Min: unixtime.Seconds(Epoch), Max: math.Floor(unixtime.Seconds(now.Add(ClockSkew))), ZeroIsNone: true,
		Unit: "Unix seconds", MinNote: Epoch.Format(time.RFC3339), MaxNote: "now + " + durationNote(ClockSkew) + " of clock skew",
	}
}

// TimeoutRange is the range of timeout_seconds: one second (the
// enforcement's resolution; 1e-7 was accepted as a timeout no sweep could
// keep) up to MaxTimeout, or 0 for no timeout.
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

// durationNote writes a whole number of days as days ("365 days"), of
// hours as hours ("1h"), as a duration otherwise.
func durationNote(d time.Duration) string {
	switch {
	case d%(24*time.Hour) == 0:
		return strconv.FormatInt(int64(d/(24*time.Hour)), 10) + " days"
	case d%time.Hour == 0:
		return strconv.FormatInt(int64(d/time.Hour), 10) + "h"
	}
	return d.String()
}
