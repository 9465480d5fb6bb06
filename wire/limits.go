package wire

import (
	"bytes"
	"fmt"
	"reflect"
	"unicode/utf8"

	"watchdog/state"
	"watchdog/transitions"
)

// Limits on what one request may carry (docs/reference/http-api.md, Limits):
// a reason is a sentence, evidence points at things; over a limit is refused whole.
const (
	// MaxMessage bounds a reason's message, in bytes.
	MaxMessage = 4096
	// MaxEvidence bounds the evidence items of one reason.
	MaxEvidence = 32
	// MaxEvidenceField bounds each text field of an evidence item, in bytes.
	MaxEvidenceField = 2048
	// MaxReasonBytes bounds a reason's message and evidence text together.
	MaxReasonBytes = 16 << 10
	// MaxPath bounds a registered path, in bytes: PATH_MAX.
	MaxPath = 4096
	// MaxListItems bounds the registered lists (lock_files, depends_on).
	MaxListItems = 64
	// MaxLabel bounds an entity's label, in bytes.
	MaxLabel = 256
	// MaxID bounds an entity's id and a parent's id, in bytes.
	MaxID = 256
	// MaxMetadata bounds an entity's metadata object as sent, in bytes.
	MaxMetadata = 16 << 10
	// MaxMetadataDepth bounds the nesting of metadata (the object is depth 1).
	MaxMetadataDepth = 8
	// MaxProgress bounds a heartbeat's progress note, one line of evidence.
	MaxProgress = 1000
)

// Paging of the entity read and of the lists (docs/reference/http-api.md, Paging).
const (
	// TransitionsInEntity is how many of the latest audit rows the entity read carries.
	TransitionsInEntity = 100
	// DefaultTransitionsPage and MaxTransitionsPage are GET …/transitions' limits.
	DefaultTransitionsPage = 100
	MaxTransitionsPage     = 200
	// DefaultEntitiesPage and MaxEntitiesPage are GET /api/v1/entities' limits.
	DefaultEntitiesPage = 500
	MaxEntitiesPage     = 5000
	// MaxListBytes is one list answer's byte budget (one item is always sent).
	MaxListBytes = 8 << 20
)

// ErrOverLimit marks a field over a limit: the write path's own sentinel, one cause.
var ErrOverLimit = transitions.ErrOverLimit

func overLimit(field string, n, limit int, unit string) error {
	return fmt.Errorf("%w: %s: %d %s, over the %d-%s limit", ErrOverLimit, field, n, unit, limit, singular(unit))
}

func singular(unit string) string {
	if unit == "bytes" {
		return "byte"
	}
	if unit == "items" {
		return "item"
	}
	return unit
}

// CheckReason refuses a reason over the message and evidence limits.
func CheckReason(r *state.StateReason) error {
	if r == nil {
		return nil
	}
	if len(r.Message) > MaxMessage {
		return overLimit("reason.message", len(r.Message), MaxMessage, "bytes")
	}
	if len(r.Evidence) > MaxEvidence {
		return overLimit("reason.evidence", len(r.Evidence), MaxEvidence, "items")
	}
	for i, ev := range r.Evidence {
		v := reflect.ValueOf(ev)
		for j := range v.NumField() {
			f := v.Field(j)
			if f.Kind() != reflect.String || f.Len() <= MaxEvidenceField {
				continue
			}
			name := jsonName(v.Type().Field(j))
			return overLimit(fmt.Sprintf("reason.evidence[%d].%s", i, name), f.Len(), MaxEvidenceField, "bytes")
		}
	}
	if total := reasonBytes(r.Message, r.Evidence); total > MaxReasonBytes {
		return overLimit("reason (message and evidence together)", total, MaxReasonBytes, "bytes")
	}
	return nil
}

// FitReason trims a reason the program builds itself (exec's) to the limits,
// saying what was left out, so an end is never refused; the first evidence is kept.
func FitReason(r *state.StateReason) {
	if r == nil {
		return
	}
	r.Message = clip(r.Message, MaxMessage)
	for i := range r.Evidence {
		v := reflect.ValueOf(&r.Evidence[i]).Elem()
		for j := range v.NumField() {
			if f := v.Field(j); f.Kind() == reflect.String {
				f.SetString(clip(f.String(), MaxEvidenceField))
			}
		}
	}
	summary := func(n int) state.EvidenceRef {
		return state.EvidenceRef{Kind: state.EvidenceToolResult, Detail: fmt.Sprintf("and %d more, not listed", n)}
	}
	dropped := 0
	for len(r.Evidence) > 0 {
		with := r.Evidence
		if dropped > 0 {
			with = append(with[:len(with):len(with)], summary(dropped))
		}
		if len(with) <= MaxEvidence && reasonBytes(r.Message, with) <= MaxReasonBytes {
			r.Evidence = with
			return
		}
		r.Evidence = r.Evidence[:len(r.Evidence)-1]
		dropped++
	}
	if dropped > 0 {
		r.Evidence = []state.EvidenceRef{summary(dropped)}
	}
}

// reasonBytes is what MaxReasonBytes counts.
func reasonBytes(msg string, evidence []state.EvidenceRef) int {
	total := len(msg)
	for _, ev := range evidence {
		v := reflect.ValueOf(ev)
		for j := range v.NumField() {
			if f := v.Field(j); f.Kind() == reflect.String {
				total += f.Len()
			}
		}
	}
	return total
}

// clip shortens s to at most limit bytes on a UTF-8 boundary, marking the cut.
func clip(s string, limit int) string {
	if len(s) <= limit {
		return s
	}
	const mark = " …(cut)"
	cut := limit - len(mark)
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + mark
}

func jsonName(f reflect.StructField) string {
	tag := f.Tag.Get("json")
	for i := range len(tag) {
		if tag[i] == ',' {
			return tag[:i]
		}
	}
	if tag == "" {
		return f.Name
	}
	return tag
}

// checkMetadata refuses metadata over MaxMetadata or MaxMetadataDepth,
// sizing first so the depth count is bounded.
func checkMetadata(raw []byte) error {
	if len(raw) > MaxMetadata {
		return overLimit("metadata", len(raw), MaxMetadata, "bytes")
	}
	if d := jsonDepth(raw); d > MaxMetadataDepth {
		return fmt.Errorf("%w: metadata: nested %d levels deep, over the %d-level limit", ErrOverLimit, d, MaxMetadataDepth)
	}
	return nil
}

// jsonDepth is the deepest nesting in well-formed JSON, strings skipped.
func jsonDepth(raw []byte) int {
	depth, deepest := 0, 0
	inString, escaped := false, false
	for _, c := range bytes.TrimSpace(raw) {
		switch {
		case inString:
			switch {
			case escaped:
				escaped = false
			case c == '\\':
				escaped = true
			case c == '"':
				inString = false
			}
		case c == '"':
			inString = true
		case c == '{' || c == '[':
			depth++
			deepest = max(deepest, depth)
		case c == '}' || c == ']':
			depth--
		}
	}
	return deepest
}
