package main

import (
	"errors"
	"fmt"
	"strconv"
	"time"

	"watchdog/transitions"
)

// secondsFlag is a seconds flag checked against its range as it is parsed,
// so an out-of-range number is one usage error quoting it as given.
type secondsFlag struct {
	v     *float64
	name  string
	rng   transitions.Range
	given string
}

func newSecondsFlag(v *float64, name string, rng transitions.Range) *secondsFlag {
	return &secondsFlag{v: v, name: name, rng: rng}
}

func (f *secondsFlag) Set(s string) error {
	v, err := strconv.ParseFloat(s, 64)
	if err != nil && !errors.Is(err, strconv.ErrRange) {
		return fmt.Errorf("%q is not a number of seconds", s)
	}
	// Past float64 ParseFloat gives ±Inf, outside every range.
	if err := f.rng.Check(f.name, s, v); err != nil {
		return err
	}
	*f.v, f.given = v, s
	return nil
}

func (f *secondsFlag) String() string {
	if f.given != "" {
		return f.given
	}
	if f.v == nil {
		return "0"
	}
	return strconv.FormatFloat(*f.v, 'f', -1, 64)
}

func (*secondsFlag) Type() string { return "seconds" }

// durationFlag is a Go duration flag checked against a range in seconds
// as it is parsed.
type durationFlag struct {
	d     *time.Duration
	name  string
	rng   transitions.Range
	given string
}

func newDurationFlag(d *time.Duration, name string, rng transitions.Range) *durationFlag {
	return &durationFlag{d: d, name: name, rng: rng}
}

func (f *durationFlag) Set(s string) error {
	d, err := time.ParseDuration(s)
	if err != nil {
		return fmt.Errorf("%q is not a duration (like 90s, 30m or 2h), or one past 292 years", s)
	}
	if err := f.rng.Check(f.name, s, d.Seconds()); err != nil {
		return err
	}
	*f.d, f.given = d, s
	return nil
}

func (f *durationFlag) String() string {
	if f.given != "" {
		return f.given
	}
	if f.d == nil || *f.d == 0 {
		return "0" // what pflag takes for no default
	}
	return f.d.String()
}

func (*durationFlag) Type() string { return "duration" }
