// Package wire holds the JSON shapes of docs/reference/http-api.md and their
// strict decoding, shared by the HTTP API and the CLI.
package wire

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"watchdog/internal/unixtime"
	"watchdog/state"
	"watchdog/store"
	"watchdog/transitions"
)

// MaxBody is the largest request document accepted (1 MiB).
const MaxBody = 1 << 20

// ErrBadInput marks a document that could not be decoded.
var ErrBadInput = errors.New("bad input")

// ErrTooLarge marks a document over MaxBody.
var ErrTooLarge = errors.New("request body too large")

// Decode reads exactly one JSON value from r into v, refusing unknown
// fields, trailing data, oversized and out-of-range documents (DecodeAt).
// Empty is an error unless allowEmpty.
func Decode(r io.Reader, v any, allowEmpty bool) error {
	return DecodeAt(r, v, allowEmpty, time.Now())
}

// decode is Decode with check run on the raw bytes first.
func decode(r io.Reader, v any, allowEmpty bool, check func([]byte) error) error {
	data, err := io.ReadAll(io.LimitReader(r, MaxBody+1))
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return fmt.Errorf("%w: over %d bytes", ErrTooLarge, MaxBody)
		}
		return fmt.Errorf("%w: read body: %v", ErrBadInput, err)
	}
	if len(data) > MaxBody {
		return fmt.Errorf("%w: over %d bytes", ErrTooLarge, MaxBody)
	}
	if len(bytes.TrimSpace(data)) == 0 {
		if allowEmpty {
			return nil
		}
		return fmt.Errorf("%w: empty document, want a JSON object", ErrBadInput)
	}
	// The fields with ranges first: their refusal names the range.
	if err := check(data); err != nil {
		return err
	}
	if err := checkDocument(data); err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("%w: %s", ErrBadInput, describeJSONError(err, data))
	}
	if dec.More() {
		return fmt.Errorf("%w: trailing data after the JSON object", ErrBadInput)
	}
	return nil
}

func describeJSONError(err error, data []byte) string {
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syn):
		line := 1 + bytes.Count(data[:min(int(syn.Offset), len(data))], []byte("\n"))
		return fmt.Sprintf("malformed JSON at line %d (byte %d): %v", line, syn.Offset, syn)
	case errors.As(err, &typ):
		field := typ.Field
		if field == "" {
			return fmt.Sprintf("want a JSON object, got %s", typ.Value)
		}
		want := typeName(typ.Type.Kind().String())
		if strings.HasPrefix(typ.Value, "number") && want == "a number" {
			// The JSON was a number, just not one this field can hold.
			return fmt.Sprintf("field %q: %s is out of range or not a whole number", field, strings.TrimSpace(strings.TrimPrefix(typ.Value, "number")))
		}
		return fmt.Sprintf("field %q: want %s, got %s", field, want, typ.Value)
	case errors.Is(err, io.ErrUnexpectedEOF):
		return "malformed JSON: unexpected end of document"
	}
	msg := strings.TrimPrefix(err.Error(), "json: ")
	return msg
}

func typeName(kind string) string {
	switch kind {
	case "int", "int64", "uint64", "float64":
		return "a number"
	case "string":
		return "a string"
	case "bool":
		return "true or false"
	case "slice":
		return "a list"
	case "map", "struct":
		return "an object"
	}
	return kind
}

// OptString is a JSON string that tells null (legacy) from omitted.
type OptString struct {
	Set   bool
	Null  bool
	Value string
}

// UnmarshalJSON records presence and nullness.
func (o *OptString) UnmarshalJSON(b []byte) error {
	o.Set = true
	if string(b) == "null" {
		o.Null = true
		return nil
	}
	return json.Unmarshal(b, &o.Value)
}

// MarshalJSON writes null for Null and the string otherwise.
func (o OptString) MarshalJSON() ([]byte, error) {
	if o.Null {
		return []byte("null"), nil
	}
	return json.Marshal(o.Value)
}

// IsZero reports an omitted value, for `omitzero`.
func (o OptString) IsZero() bool { return !o.Set && !o.Null }

// Artifact is one artifact of the wire contract; required defaults to true.
type Artifact struct {
	Path           string `json:"path" yaml:"path"`
	Required       *bool  `json:"required,omitempty" yaml:"required"`
	MinBytes       int64  `json:"min_bytes,omitempty" yaml:"min_bytes"`
	Kind           string `json:"kind,omitempty" yaml:"kind"`
	NewerThanStart bool   `json:"newer_than_start,omitempty" yaml:"newer_than_start"`
}

// Spec converts to the model's ArtifactSpec.
func (a Artifact) Spec() state.ArtifactSpec {
	req := true
	if a.Required != nil {
		req = *a.Required
	}
	return state.ArtifactSpec{Path: a.Path, Required: req, MinBytes: a.MinBytes, Kind: a.Kind, NewerThanStart: a.NewerThanStart}
}

// Ref names another entity.
type Ref struct {
	Type string `json:"type"`
	ID   string `json:"id"`
}

// Schedule is a schedule entity's cron spec and last fire time.
type Schedule struct {
	Cron        string        `json:"cron"`
	LastFiredAt unixtime.Time `json:"last_fired_at,omitzero"`
}

// Register is the body of POST /api/v1/entities and `watchdog register`.
type Register struct {
	Type          string        `json:"type"`
	ID            string        `json:"id"`
	Label         string        `json:"label,omitempty"`
	Lifecycle     OptString     `json:"lifecycle,omitzero"`
	PID           int           `json:"pid,omitempty"`
	PIDStartTime  unixtime.Time `json:"pid_start_time,omitzero"`
	HostID        string        `json:"host_id,omitempty"`
	BootID        string        `json:"boot_id,omitempty"`
	SupervisorPID int           `json:"supervisor_pid,omitempty"`
	// SupervisorStartTime identifies the supervisor; filled in when local.
	SupervisorStartTime unixtime.Time   `json:"supervisor_start_time,omitzero"`
	HeartbeatFile       string          `json:"heartbeat_file,omitempty"`
	TimeoutSeconds      float64         `json:"timeout_seconds,omitempty"`
	ArtifactsRoot       string          `json:"artifacts_root,omitempty"`
	Artifacts           []Artifact      `json:"artifacts,omitempty"`
	LockFiles           []string        `json:"lock_files,omitempty"`
	Parent              *Ref            `json:"parent,omitempty"`
	DependsOn           []string        `json:"depends_on,omitempty"`
	Schedule            *Schedule       `json:"schedule,omitempty"`
	Metadata            json.RawMessage `json:"metadata,omitempty"`
}

// Registration converts a decoded body into the write path's request,
// checking what the decoder cannot.
func (r Register) Registration(actor string) (transitions.Registration, error) {
	if strings.TrimSpace(r.Type) == "" {
		return transitions.Registration{}, fmt.Errorf("%w: field \"type\" is required", ErrBadInput)
	}
	if strings.TrimSpace(r.ID) == "" {
		return transitions.Registration{}, fmt.Errorf("%w: field \"id\" is required", ErrBadInput)
	}
	if len(r.Metadata) > 0 && string(r.Metadata) != "null" && !bytes.HasPrefix(bytes.TrimSpace(r.Metadata), []byte("{")) {
		return transitions.Registration{}, fmt.Errorf("%w: field \"metadata\" must be an object", ErrBadInput)
	}
	if err := r.checkLimits(); err != nil {
		return transitions.Registration{}, err
	}
	e := store.Entity{
		Type: r.Type, ID: r.ID, Label: r.Label,
		PID: r.PID, PIDStartTime: r.PIDStartTime.Time, HostID: r.HostID, BootID: r.BootID,
		SupervisorPID: r.SupervisorPID, SupervisorStartTime: r.SupervisorStartTime.Time, HeartbeatFile: r.HeartbeatFile, Timeout: unixtime.Duration(r.TimeoutSeconds),
		ArtifactsRoot: r.ArtifactsRoot, LockFiles: r.LockFiles, DependsOn: r.DependsOn,
		Metadata: r.Metadata,
	}
	if r.Artifacts != nil {
		// An explicit [] clears the contract on re-registration; absent keeps it.
		e.Artifacts = make([]state.ArtifactSpec, 0, len(r.Artifacts))
	}
	for _, a := range r.Artifacts {
		e.Artifacts = append(e.Artifacts, a.Spec())
	}
	if r.Parent != nil {
		e.ParentType, e.ParentID = r.Parent.Type, r.Parent.ID
		if e.ParentType == "" || e.ParentID == "" {
			return transitions.Registration{}, fmt.Errorf("%w: parent needs both type and id", ErrBadInput)
		}
	}
	if r.Schedule != nil {
		e.ScheduleCron, e.ScheduleLastFiredAt = r.Schedule.Cron, r.Schedule.LastFiredAt.Time
	}
	reg := transitions.Registration{Entity: e, Actor: actor}
	switch {
	case r.Lifecycle.Null:
		reg.Legacy = true
	case r.Lifecycle.Set:
		l := r.Lifecycle.Value
		reg.Entity.Lifecycle = &l
	}
	return reg, nil
}

// checkLimits refuses a registration over the limits of limits.go.
func (r Register) checkLimits() error {
	if len(r.ID) > MaxID {
		return overLimit("id", len(r.ID), MaxID, "bytes")
	}
	if len(r.Label) > MaxLabel {
		return overLimit("label", len(r.Label), MaxLabel, "bytes")
	}
	if r.Parent != nil && len(r.Parent.ID) > MaxID {
		return overLimit("parent.id", len(r.Parent.ID), MaxID, "bytes")
	}
	for _, f := range []struct {
		name  string
		value string
		limit int
	}{
		{"host_id", r.HostID, MaxID},
		{"boot_id", r.BootID, MaxID},
		{"heartbeat_file", r.HeartbeatFile, MaxPath},
		{"artifacts_root", r.ArtifactsRoot, MaxPath},
	} {
		if len(f.value) > f.limit {
			return overLimit(f.name, len(f.value), f.limit, "bytes")
		}
	}
	if r.Schedule != nil && len(r.Schedule.Cron) > MaxLabel {
		return overLimit("schedule.cron", len(r.Schedule.Cron), MaxLabel, "bytes")
	}
	if err := checkList("lock_files", r.LockFiles, MaxPath); err != nil {
		return err
	}
	if err := checkList("depends_on", r.DependsOn, MaxID); err != nil {
		return err
	}
	return checkMetadata(r.Metadata)
}

// checkList refuses over MaxListItems entries or an entry over limit bytes.
func checkList(field string, items []string, limit int) error {
	if len(items) > MaxListItems {
		return overLimit(field, len(items), MaxListItems, "items")
	}
	for i, v := range items {
		if len(v) > limit {
			return overLimit(fmt.Sprintf("%s[%d]", field, i), len(v), limit, "bytes")
		}
	}
	return nil
}

// Reason is a transition's reason on the wire.
type Reason struct {
	Code     string              `json:"code"`
	Message  string              `json:"message,omitempty"`
	Evidence []state.EvidenceRef `json:"evidence,omitempty"`
}

// Transition is the body of POST …/transitions.
type Transition struct {
	To             string  `json:"to"`
	Reason         *Reason `json:"reason,omitempty"`
	ExpectFrom     string  `json:"expect_from,omitempty"`
	Actor          string  `json:"actor,omitempty"`
	Trigger        string  `json:"trigger,omitempty"`
	TimeoutSeconds float64 `json:"timeout_seconds,omitempty"`
	ElapsedSeconds float64 `json:"elapsed_seconds,omitempty"`
	// ExitStatus is how the process ended as the caller saw it: shown, never acted on.
	ExitStatus *state.ExitStatus `json:"exit_status,omitempty"`
}

// Request converts a decoded body into the write path's request.
func (t Transition) Request(typ, id, defaultActor string) (transitions.Request, error) {
	if strings.TrimSpace(t.To) == "" {
		return transitions.Request{}, fmt.Errorf("%w: field \"to\" is required", ErrBadInput)
	}
	req := transitions.Request{
		Type: typ, ID: id, To: t.To, ExpectFrom: t.ExpectFrom, Actor: t.Actor, Trigger: t.Trigger,
		Timeout: unixtime.Duration(t.TimeoutSeconds), Elapsed: unixtime.Duration(t.ElapsedSeconds),
		Exit: t.ExitStatus,
	}
	if req.Actor == "" {
		req.Actor = defaultActor
	}
	if t.Reason != nil {
		ev := t.Reason.Evidence
		if ev == nil {
			ev = []state.EvidenceRef{}
		}
		req.Reason = &state.StateReason{Code: state.ReasonCode(t.Reason.Code), Message: t.Reason.Message, Evidence: ev}
		if err := CheckReason(req.Reason); err != nil {
			return transitions.Request{}, err
		}
	}
	return req, nil
}

// Heartbeat is the body of POST …/heartbeat (may be empty).
type Heartbeat struct {
	Progress string `json:"progress,omitempty"`
}

// Check refuses a progress note over MaxProgress, on HTTP and the CLI alike.
func (h Heartbeat) Check() error {
	if len(h.Progress) > MaxProgress {
		return fmt.Errorf("%w: progress is %d bytes; keep it to one line of at most %d", ErrBadInput, len(h.Progress), MaxProgress)
	}
	return transitions.CheckText("progress", h.Progress)
}
