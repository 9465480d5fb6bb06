package wire

import (
	"bytes"
	"fmt"
	"reflect"
	"unicode/utf8"

	"watchdog/state"
	"watchdog/transitions"
)

// Limits on what one request may carry (docs/reference/http-api.md, Limits:
// each named in the error). They keep one entity's read, and the audit
// trail behind it, proportionate: a reason message is a sentence, not a
// log; evidence points at things, it does not contain them. A request over
// a limit is refused whole (ErrOverLimit, HTTP 422) and changes nothing;
// a body over MaxBody is refused before it is decoded (ErrTooLarge, 413).
const (
	// MaxMessage bounds a reason's message, in bytes.
	MaxMessage = 4096
	// MaxEvidence bounds the evidence items of one reason.
	MaxEvidence = 32
	// MaxEvidenceField bounds each text field of an evidence item (detail,
	// path, url, ids), in bytes.
	MaxEvidenceField = 2048
	// MaxReasonBytes bounds a whole reason: its message plus every text
	// field of its evidence. The per-field limits alone would let one
	// reason carry 32 × 11 × 2 KiB; this keeps an audit row, and so the
	// entity read (100 rows) and a transitions page (MaxTransitionsPage
	// rows), to a few MB.
	MaxReasonBytes = 16 << 10
	// MaxPath bounds a registered path (heartbeat_file, artifacts_root,
	// each lock file), in bytes: PATH_MAX.
	MaxPath = 4096
	// MaxListItems bounds the registered lists (lock_files, depends_on).
	MaxListItems = 64
	// MaxLabel bounds an entity's label, in bytes.
	MaxLabel = 256
	// MaxID bounds an entity's id and a parent's id, in bytes.
	MaxID = 256
	// MaxMetadata bounds an entity's metadata object as sent, in bytes.
	MaxMetadata = 16 << 10
	// MaxMetadataDepth bounds the nesting of metadata: the object itself
	// is depth 1.
	MaxMetadataDepth = 8
	// MaxProgress bounds a heartbeat's progress note: it is shown as
	// evidence, one short line, not a log. (Over it is a 400, as before
	// these limits had a name of their own.)
	MaxProgress = 1000
)

// Paging of the entity read and of the lists (docs/reference/http-api.md, Paging).
const (
	// TransitionsInEntity is how many audit rows the entity read carries:
	// the latest ones, oldest first; …/transitions pages the rest.
	TransitionsInEntity = 100
	// DefaultTransitionsPage and MaxTransitionsPage are the default and
	// largest limit of GET …/transitions.
	DefaultTransitionsPage = 100
	MaxTransitionsPage     = 200
	// DefaultEntitiesPage and MaxEntitiesPage are the default and largest
	// limit of GET /api/v1/entities.
	DefaultEntitiesPage = 500
	MaxEntitiesPage     = 5000
	// MaxListBytes is the byte budget of one GET /api/v1/entities answer:
	// its items are encoded one at a time as they are written, and the
	// page ends (with next) at the first item that would take it past
	// the budget, whatever the limit; one item is always sent.
	MaxListBytes = 8 << 20
)

// ErrOverLimit marks a field over one of the limits above; the message
// names the field, its size and the limit. It is the write path's own
// sentinel, so a limit refused here or there (an artifact contract) is one
// cause, over_limit, to every caller.
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

// CheckReason refuses a reason over the message and evidence limits. The
// HTTP API and the command line both apply it, so a transition is bounded
// whichever way it comes.
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

// FitReason trims a reason the program builds itself (exec's account of a
// child's end, which names every failing artifact) to the limits
// CheckReason enforces, saying what was left out, so that the record of
// an end is never refused for its length. The first evidence items are
// kept: they are the most specific.
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

// reasonBytes is what MaxReasonBytes counts: the message and every text
// field of the evidence.
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

// clip shortens s to at most limit bytes on a UTF-8 boundary, marking the
// cut.
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

// checkMetadata refuses metadata over MaxMetadata bytes or nested deeper
// than MaxMetadataDepth. The depth is counted on the raw bytes, after the
// size check, so the work is bounded by MaxMetadata whatever was sent
// (9,000 levels of nesting cost one pass over 18 KB, then a refusal).
func checkMetadata(raw []byte) error {
	if len(raw) > MaxMetadata {
		return overLimit("metadata", len(raw), MaxMetadata, "bytes")
	}
	if d := jsonDepth(raw); d > MaxMetadataDepth {
		return fmt.Errorf("%w: metadata: nested %d levels deep, over the %d-level limit", ErrOverLimit, d, MaxMetadataDepth)
	}
	return nil
}

// jsonDepth is the deepest nesting of objects and arrays in a JSON text
// (strings skipped, escapes honoured). The input was decoded already, so
// it is well formed.
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
