package wire

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"watchdog/transitions"
)

// ErrOutOfRange marks a number outside its range; it is also ErrOverLimit.
var ErrOutOfRange = transitions.ErrOutOfRange

// Bound is one number of a document and the range it must fall in.
type Bound struct {
	// Path is the field, dotted, with [] after a list: "artifacts[].min_bytes".
	Path string
	// Range is the field's range at now.
	Range func(now time.Time) transitions.Range
}

// Bounded is a document whose numbers DecodeAt checks before decoding.
type Bounded interface {
	Bounds() []Bound
}

// Bounds implements Bounded: the numbers of a registration.
func (*Register) Bounds() []Bound {
	return []Bound{
		{"pid", pidRange},
		{"supervisor_pid", pidRange},
		{"pid_start_time", transitions.TimeRange},
		{"supervisor_start_time", transitions.TimeRange},
		{"timeout_seconds", timeoutRange},
		{"artifacts[].min_bytes", bytesRange},
		{"schedule.last_fired_at", transitions.TimeRange},
	}
}

// Bounds implements Bounded: the numbers of a transition.
func (*Transition) Bounds() []Bound {
	return []Bound{
		{"timeout_seconds", timeoutRange},
		{"elapsed_seconds", elapsedRange},
		{"reason.evidence[].fetched_at", transitions.TimeRange},
	}
}

func pidRange(time.Time) transitions.Range     { return transitions.PIDRange() }
func timeoutRange(time.Time) transitions.Range { return transitions.TimeoutRange() }
func bytesRange(time.Time) transitions.Range   { return transitions.BytesRange() }
func elapsedRange(time.Time) transitions.Range { return transitions.ElapsedRange() }

// DecodeAt is Decode checking, when v is Bounded, each number against its
// range on the literal as sent, before decoding could change it (1e18 in a float64).
func DecodeAt(r io.Reader, v any, allowEmpty bool, now time.Time) error {
	return decode(r, v, allowEmpty, func(data []byte) error {
		b, ok := v.(Bounded)
		if !ok {
			return nil
		}
		return CheckBounds(data, b.Bounds(), now)
	})
}

// CheckBounds checks the numbers bounds name in data; others are left to the
// decoding. Keys match case-insensitively, every duplicate checked.
func CheckBounds(data []byte, bounds []Bound, now time.Time) error {
	// Parsed once for every bound: a body may be a MiB.
	var top map[string]json.RawMessage
	if json.Unmarshal(data, &top) != nil {
		return nil // not an object: the decoding says so
	}
	for _, b := range bounds {
		rng := b.Range(now)
		err := visitObject(top, strings.Split(b.Path, "."), "", func(field, lit string) error {
			v, err := strconv.ParseFloat(lit, 64)
			if err != nil && v == 0 {
				// The decoding refuses it.
				return nil
			}
			// Past float64 (1e400) ParseFloat gives ±Inf, out of any range.
			return rng.Check(field, lit, v)
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// visitNumbers calls visit with each number at path under raw.
func visitNumbers(raw []byte, path []string, name string, visit func(field, lit string) error) error {
	raw = bytes.TrimSpace(raw)
	if len(path) == 0 {
		if len(raw) > 0 && (raw[0] == '-' || raw[0] >= '0' && raw[0] <= '9') {
			return visit(name, string(raw))
		}
		return nil
	}
	var obj map[string]json.RawMessage
	if json.Unmarshal(raw, &obj) != nil {
		return nil // not an object: the decoding says so
	}
	return visitObject(obj, path, name, visit)
}

// visitObject is visitNumbers on an object already parsed.
func visitObject(obj map[string]json.RawMessage, path []string, name string, visit func(field, lit string) error) error {
	key, list := strings.CutSuffix(path[0], "[]")
	field := key
	if name != "" {
		field = name + "." + key
	}
	for k, v := range obj {
		if !strings.EqualFold(k, key) {
			continue
		}
		if !list {
			if err := visitNumbers(v, path[1:], field, visit); err != nil {
				return err
			}
			continue
		}
		var items []json.RawMessage
		if json.Unmarshal(v, &items) != nil {
			continue
		}
		for i, it := range items {
			if err := visitNumbers(it, path[1:], fmt.Sprintf("%s[%d]", field, i), visit); err != nil {
				return err
			}
		}
	}
	return nil
}
