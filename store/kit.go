package store

import (
	"database/sql"
	"encoding/json"
	"fmt"
	"time"

	"watchdog/state"
)

// This file is the kit another backend builds on (watchdog/store/pgstore):
// the row shapes and their one encoding, so that a second backend stores
// and reads exactly what SQLite does and the transition's bookkeeping is
// decided in one place.

// RowScanner is a row a query returned (database/sql's and pgx's alike).
type RowScanner interface{ Scan(dest ...any) error }

// Column lists in the order the scanners below read them.
const (
	// EntityColumns are the columns ScanEntity reads.
	EntityColumns = entityColumns
	// AuditColumns are the columns ScanAudit reads.
	AuditColumns = auditColumns
	// AttentionColumns are the columns ScanAttention reads.
	AttentionColumns = attentionColumns
)

// EntityScanner decodes entity rows, sharing decoded artifact contracts
// between the rows of one read (see artifactCache). The zero value works;
// use one per read.
type EntityScanner struct{ cache artifactCache }

// Scan decodes one row of EntityColumns.
func (s *EntityScanner) Scan(r RowScanner) (Entity, error) {
	if s.cache == nil {
		s.cache = artifactCache{}
	}
	return scanEntityShared(r, s.cache)
}

// ScanEntity decodes one row of EntityColumns.
func ScanEntity(r RowScanner) (Entity, error) { return scanEntity(r) }

// ScanAudit decodes one row of AuditColumns.
func ScanAudit(r RowScanner) (AuditRow, error) {
	var (
		a        AuditRow
		from     sql.NullString
		evidence string
	)
	if err := r.Scan(&a.Seq, &a.EntityType, &a.EntityID, &from, &a.To, &a.ReasonCode, &a.Message, &evidence, &a.Actor, &a.Trigger, unixCol{&a.At}); err != nil {
		return AuditRow{}, err
	}
	if from.Valid {
		f := from.String
		a.From = &f
	}
	if evidence != "[]" {
		if err := json.Unmarshal([]byte(evidence), &a.Evidence); err != nil {
			return AuditRow{}, fmt.Errorf("decode evidence of row %d: %w", a.Seq, err)
		}
	}
	return a, nil
}

// ScanAttention decodes one row of AttentionColumns (AttentionCandidates'
// partial entity).
func ScanAttention(r RowScanner) (Entity, error) {
	var (
		e                           Entity
		lifecycle, transitionReason sql.NullString
		health, delivery            string
		reasons                     string
	)
	if err := r.Scan(&e.Type, &e.ID, &e.Label, &lifecycle, &e.Terminal, &transitionReason, &health, &delivery, &reasons,
		unixCol{&e.HealthSince}, unixCol{&e.EndedAt}, unixCol{&e.LifecycleAt}, unixCol{&e.CreatedAt}, unixCol{&e.UpdatedAt}); err != nil {
		return Entity{}, err
	}
	if lifecycle.Valid {
		l := lifecycle.String
		e.Lifecycle = &l
	}
	e.Health, e.Delivery = state.Health(health), state.Delivery(delivery)
	if transitionReason.Valid && transitionReason.String != "" {
		var r state.StateReason
		if err := json.Unmarshal([]byte(transitionReason.String), &r); err != nil {
			return Entity{}, fmt.Errorf("entity %s/%s: decode transition_reason: %w", e.Type, e.ID, err)
		}
		e.TransitionReason = &r
	}
	if err := json.Unmarshal([]byte(reasons), &e.Reasons); err != nil {
		return Entity{}, fmt.Errorf("entity %s/%s: decode reasons: %w", e.Type, e.ID, err)
	}
	return e, nil
}

// ScanDismissal decodes one row of DismissalColumns.
func ScanDismissal(r RowScanner) (Dismissal, error) {
	var d Dismissal
	err := r.Scan(&d.ID, &d.Fingerprint, &d.EntityType, &d.EntityID, &d.ReasonCode, &d.StatusAtDismissal,
		unixCol{&d.SnoozedUntil}, unixCol{&d.DismissedAt}, &d.DismissedBy, &d.ClearOnStatusChange, unixCol{&d.CreatedAt}, unixCol{&d.Occurrence})
	return d, err
}

// DismissalColumns are the columns ScanDismissal reads.
const DismissalColumns = `id, fingerprint, entity_type, entity_id, reason_code, status_at_dismissal,
	snoozed_until, dismissed_at, dismissed_by, clear_on_status_change, created_at, occurrence_at`

// UnixArg is t as a time column holds it (Unix seconds, a double), or nil
// (NULL) for the zero time.
func UnixArg(t time.Time) any { return unixArg(t) }

// SecondsArg is d as a duration column holds it (seconds), nil for zero.
func SecondsArg(d time.Duration) any { return secondsArg(d) }

// NullInt is i, or nil (NULL) for zero.
func NullInt(i int64) any { return nullInt(i) }

// JSONList is v's JSON text, "[]" for a nil list: how list columns
// (reasons, artifacts, lock_files, depends_on, evidence) are stored.
func JSONList(v any) (string, error) { return jsonText(v, "[]") }

// NewDismissalID makes the random id of a new dismissal row.
func NewDismissalID() (string, error) { return newDismissalID() }

// Registration is what Register stores of an entity, encoded once for
// every backend: the list columns' JSON, the metadata and the defaults.
type Registration struct {
	Artifacts, LockFiles, DependsOn string
	// Metadata is the metadata's JSON, "{}" when none; HasMetadata says
	// whether the caller sent any (an upsert keeps the stored one if not).
	Metadata    string
	HasMetadata bool
	Health      state.Health
	Delivery    state.Delivery
}

// EncodeRegistration encodes e's stored fields.
func EncodeRegistration(e Entity) (Registration, error) {
	var r Registration
	var err error
	if r.Artifacts, err = jsonText(e.Artifacts, "[]"); err != nil {
		return Registration{}, fmt.Errorf("encode artifacts: %w", err)
	}
	r.LockFiles, _ = jsonText(e.LockFiles, "[]")
	r.DependsOn, _ = jsonText(e.DependsOn, "[]")
	r.Metadata = "{}"
	if len(e.Metadata) > 0 && string(e.Metadata) != "null" {
		r.Metadata, r.HasMetadata = string(e.Metadata), true
	}
	r.Health, r.Delivery = e.Health, e.Delivery
	if r.Health == "" {
		r.Health = state.HealthUnknown
	}
	if r.Delivery == "" {
		r.Delivery = state.DeliveryUnknown
	}
	return r, nil
}

// TransitionPlan is what a decided Change writes besides the lifecycle,
// worked out once for every backend from the entity as read.
type TransitionPlan struct {
	// Audit is the audit row to append (its Seq is the backend's).
	Audit AuditRow
	// Reason is the StateReason's JSON for transition_reason, or nil.
	Reason any
	// EndedAt and StartedAt are the Unix seconds to stamp, or nil.
	EndedAt, StartedAt any
	// Delivery and Reasons replace the stored ones when not nil.
	Delivery, Reasons any
}

// PlanTransition works out the writes of ch on cur: the audit row, the
// reason, the end and start stamps, and the findings a transition answers
// or a delivery verdict replaces.
func PlanTransition(cur Entity, ch Change) (TransitionPlan, error) {
	p := TransitionPlan{Audit: AuditRow{EntityType: cur.Type, EntityID: cur.ID, From: cur.Lifecycle, To: ch.To, Actor: ch.Actor, Trigger: ch.Trigger, At: ch.At}}
	if ch.Reason != nil {
		p.Audit.ReasonCode, p.Audit.Message, p.Audit.Evidence = string(ch.Reason.Code), ch.Reason.Message, ch.Reason.Evidence
		b, err := json.Marshal(ch.Reason)
		if err != nil {
			return TransitionPlan{}, fmt.Errorf("encode reason: %w", err)
		}
		p.Reason = string(b)
	}
	if ch.Terminal {
		p.EndedAt = unixArg(ch.At)
	}
	if ch.Starts {
		p.StartedAt = unixArg(ch.At)
	}
	kept, answered := withoutFlags(cur.Reasons)
	if ch.Delivery != nil || answered {
		if ch.Delivery != nil {
			kept = withDelivery(kept, ch.Delivery, ch.At)
			p.Delivery = string(ch.Delivery.Delivery)
		}
		b, err := jsonText(kept, "[]")
		if err != nil {
			return TransitionPlan{}, fmt.Errorf("encode reasons: %w", err)
		}
		p.Reasons = b
	}
	return p, nil
}

// ExitArgs checks an exit status a backend is asked to record (RecordExit)
// and gives its columns: exit_code, or exit_signal for a death by signal
// (the other NULL). Both backends share the rule, and its errors.
func ExitArgs(typ, id string, pid int, x state.ExitStatus) (code, signal any, err error) {
	if pid <= 0 {
		return nil, nil, fmt.Errorf("record exit %s/%s: pid %d is not a process id", typ, id, pid)
	}
	if x.At.IsZero() {
		return nil, nil, fmt.Errorf("record exit %s/%s: no time of death", typ, id)
	}
	if x.Signal != 0 {
		return nil, int64(x.Signal), nil
	}
	return int64(x.Code), nil, nil
}
