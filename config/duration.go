package config

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// Duration is a time.Duration written in YAML as a Go duration string such
// as "30s", "10m" or "24h" (no days: "1d" is an error suggesting "24h").
// Convert with time.Duration(d).
type Duration time.Duration

// String formats d like time.Duration without its zero units: "1h", "1h30m",
// "10s", "1.5s".
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

// UnmarshalYAML parses a duration string. A bad value is reported as a
// *yaml.TypeError (so that yaml.v3 goes on and collects every problem)
// carrying the value's position.
func (d *Duration) UnmarshalYAML(n *yaml.Node) error {
	if err := d.decodeScalar(n); err != nil {
		return &yaml.TypeError{Errors: []string{fmt.Sprintf("line %d: column %d: %v", n.Line, n.Column, err)}}
	}
	return nil
}

// decodeScalar parses a duration string. The suggested form is d's current
// value, the default when decoding onto [Default].
func (d *Duration) decodeScalar(n *yaml.Node) error {
	if n.Kind == yaml.ScalarNode {
		if v, ok := parseDuration(n.Value); ok {
			*d = Duration(v)
			return nil
		}
	}
	return fmt.Errorf("%s is not a duration (try %s)", describe(n), d.suggest(n.Value))
}

// parseDuration reads a Go duration ("90s", "4h30m") or a number of days
// ("7d", "1.5d"), as `watchdog snooze --for` does: a failure_window of a
// week reads as people write it. Days that do not fit a duration (about
// 292 years) are no duration.
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

// suggest returns a duration to try instead of the invalid text s.
func (d Duration) suggest(_ string) string {
	if d > 0 {
		return d.String()
	}
	return "30s"
}
