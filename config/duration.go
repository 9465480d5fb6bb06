package config

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// Duration is a time.Duration written in YAML as a Go duration or a number
// of days ("30s", "24h", "7d"). Convert with time.Duration(d).
type Duration time.Duration

// String formats d like time.Duration without its zero units ("1h30m").
func (d Duration) String() string {
	s := time.Duration(d).String()
	if strings.HasSuffix(s, "m0s") {
		s = s[:len(s)-2]
	}
	if strings.HasSuffix(s, "h0m") {
		s = s[:len(s)-2]
	}
	return s
}

// MarshalYAML writes d as its String.
func (d Duration) MarshalYAML() (any, error) {
	return d.String(), nil
}

// UnmarshalYAML parses a duration string; a bad value is a *yaml.TypeError,
// so yaml.v3 goes on and collects every problem.
func (d *Duration) UnmarshalYAML(n *yaml.Node) error {
	if err := d.decodeScalar(n); err != nil {
		return &yaml.TypeError{Errors: []string{fmt.Sprintf("line %d: column %d: %v", n.Line, n.Column, err)}}
	}
	return nil
}

// decodeScalar parses a duration string, suggesting d's current value (the
// default) instead of a bad one.
func (d *Duration) decodeScalar(n *yaml.Node) error {
	if n.Kind == yaml.ScalarNode {
		if v, ok := parseDuration(n.Value); ok {
			*d = Duration(v)
			return nil
		}
	}
	return fmt.Errorf("%s is not a duration (try %s)", describe(n), d.suggest(n.Value))
}

// parseDuration reads a Go duration or a number of days, as `watchdog
// snooze --for` does; days beyond a Duration's range are no duration.
func parseDuration(s string) (time.Duration, bool) {
	if v, err := time.ParseDuration(s); err == nil {
		return v, true
	}
	days, ok := strings.CutSuffix(s, "d")
	if !ok {
		return 0, false
	}
	n, err := strconv.ParseFloat(days, 64)
	if err != nil || n != n || n*24*float64(time.Hour) >= float64(1<<63-1) || n*24*float64(time.Hour) <= -float64(1<<63-1) {
		return 0, false
	}
	return time.Duration(n * 24 * float64(time.Hour)), true
}

func (d Duration) suggest(_ string) string {
	if d > 0 {
		return d.String()
	}
	return "30s"
}
