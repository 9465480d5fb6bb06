// Package rowcodec is the row encoding both store drivers share, so both store
// and read the same columns the same way and a transition's writes are decided once.
package rowcodec

import (
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"watchdog/internal/unixtime"
	"watchdog/state"
	"watchdog/store"
)

// RowScanner is a row a query returned (database/sql's and pgx's alike).
type RowScanner interface{ Scan(dest ...any) error }

// EntityColumns are the columns of an entity row, in the order ScanEntity
// and EntityScanner read them.
const EntityColumns = `type, id, label, lifecycle, terminal, last_seq, transition_reason,
	health, delivery, reasons, health_since, dead_since,
	host_id, boot_id, pid, pid_start_time, pid_start_ticks, supervisor_pid,
	heartbeat_file, heartbeat_at, heartbeat_progress, timeout_seconds, timeout_elapsed,
	artifacts_root, artifacts, lock_files, parent_type, parent_id, depends_on,
	schedule_cron, schedule_last_fired_at, metadata,
	started_at, ended_at, lifecycle_at, created_at, updated_at, supervisor_start_time,
	exit_code, exit_signal, exit_at,
	owner, owner_uid,
	revision`

// RevisionColumns are what a store.Filter.RevisionsOnly list reads
// (ScanRevisions).
const RevisionColumns = "type, id, revision"

// AuditColumns are the columns ScanAudit reads.
const AuditColumns = `seq, entity_type, entity_id, from_lifecycle, to_lifecycle,
	reason_code, message, evidence, actor, trigger_name, at, host_id, principal`

// AttentionColumns are the entity columns the attention queue reads
// (ScanAttention): 13 of 37 columns, most of a queue poll's cost.
const AttentionColumns = `type, id, label, lifecycle, terminal, transition_reason, health, delivery, reasons,
	health_since, ended_at, lifecycle_at, created_at, updated_at`

// DismissalColumns are the columns ScanDismissal reads.
const DismissalColumns = `id, fingerprint, entity_type, entity_id, reason_code, status_at_dismissal,
	snoozed_until, dismissed_at, dismissed_by, clear_on_status_change, created_at, occurrence_at`

// EntityScanner decodes entity rows, sharing decoded artifact contracts
// between the rows of one read (see artifactCache). The zero value works;
// use one per read.
type EntityScanner struct{ cache artifactCache }

// Scan decodes one row of EntityColumns.
func (s *EntityScanner) Scan(r RowScanner) (store.Entity, error) {
	if s.cache == nil {
		s.cache = artifactCache{}
	}
	return scanEntity(r, s.cache)
}

// Rows are a query's rows (database/sql's and pgx's alike).
type Rows interface {
	RowScanner
	Next() bool
	Err() error
}

// ScanRevisions reads RevisionColumns rows into a page of key+revision
// entities, scanned in place to avoid a heap entity per row.
func ScanRevisions(rows Rows, limit int) ([]store.Entity, error) {
	var out []store.Entity
	for rows.Next() {
		if out == nil && limit > 0 {
			out = make([]store.Entity, 0, limit)
		}
		out = append(out, store.Entity{})
		e := &out[len(out)-1]
		if err := rows.Scan(&e.Type, &e.ID, &e.Revision); err != nil {
			return nil, err
		}
	}
	return out, rows.Err()
}

// ScanEntity decodes one row of EntityColumns.
func ScanEntity(r RowScanner) (store.Entity, error) { return scanEntity(r, nil) }

// artifactCache shares decoded artifact contracts within one List (entities
// of a kind carry the same text); the shared slices are read-only.
type artifactCache map[string][]state.ArtifactSpec

// scanEntity decodes one row of EntityColumns, through cache when it is
// not nil.
func scanEntity(r RowScanner, cache artifactCache) (store.Entity, error) {
	var (
		e                                                  store.Entity
		lifecycle, transitionReason                        sql.NullString
		reasons, artifacts, lockFiles, dependsOn, metadata string
		pid, supervisor, ticks, exitCode, exitSignal       sql.NullInt64
		ownerUID                                           sql.NullInt64
		exitAt                                             time.Time
		health, delivery                                   string
	)
	err := r.Scan(&e.Type, &e.ID, &e.Label, &lifecycle, &e.Terminal, &e.LastSeq, &transitionReason,
		&health, &delivery, &reasons, ScanUnix(&e.HealthSince), ScanUnix(&e.DeadSince),
		&e.HostID, &e.BootID, &pid, ScanUnix(&e.PIDStartTime), &ticks, &supervisor,
		&e.HeartbeatFile, ScanUnix(&e.HeartbeatAt), &e.HeartbeatProgress, ScanSeconds(&e.Timeout), ScanSeconds(&e.TimeoutElapsed),
		&e.ArtifactsRoot, &artifacts, &lockFiles, &e.ParentType, &e.ParentID, &dependsOn,
		&e.ScheduleCron, ScanUnix(&e.ScheduleLastFiredAt), &metadata,
		ScanUnix(&e.StartedAt), ScanUnix(&e.EndedAt), ScanUnix(&e.LifecycleAt), ScanUnix(&e.CreatedAt), ScanUnix(&e.UpdatedAt), ScanUnix(&e.SupervisorStartTime),
		&exitCode, &exitSignal, ScanUnix(&exitAt), &e.Owner, &ownerUID, &e.Revision)
	if err != nil {
		return store.Entity{}, err
	}
	if lifecycle.Valid {
		l := lifecycle.String
		e.Lifecycle = &l
	}
	e.Health, e.Delivery = state.Health(health), state.Delivery(delivery)
	e.PID, e.PIDStartTicks, e.SupervisorPID = int(pid.Int64), uint64(ticks.Int64), int(supervisor.Int64)
	e.Metadata = json.RawMessage(metadata)
	e.OwnerUID, e.HasOwnerUID = int(ownerUID.Int64), ownerUID.Valid
	if !exitAt.IsZero() {
		e.Exit = &state.ExitStatus{Code: int(exitCode.Int64), Signal: int(exitSignal.Int64), At: exitAt}
	}
	if transitionReason.Valid && transitionReason.String != "" {
		var r state.StateReason
		if err := json.Unmarshal([]byte(transitionReason.String), &r); err != nil {
			return store.Entity{}, fmt.Errorf("entity %s/%s: decode transition_reason: %w", e.Type, e.ID, err)
		}
		e.TransitionReason = &r
	}
	if specs, ok := cache[artifacts]; ok {
		e.Artifacts = specs
		artifacts = "[]" // decoded already
	}
	for _, f := range []struct {
		name string
		raw  string
		dst  any
	}{
		{"reasons", reasons, &e.Reasons},
		{"artifacts", artifacts, &e.Artifacts},
		{"lock_files", lockFiles, &e.LockFiles},
		{"depends_on", dependsOn, &e.DependsOn},
	} {
		if f.raw == "[]" {
			continue // the common empty list: nothing to decode, and nil reads the same
		}
		if err := json.Unmarshal([]byte(f.raw), f.dst); err != nil {
			return store.Entity{}, fmt.Errorf("entity %s/%s: decode %s: %w", e.Type, e.ID, f.name, err)
		}
	}
	if cache != nil && len(e.Artifacts) > 0 && artifacts != "[]" {
		cache[artifacts] = e.Artifacts
	}
	return e, nil
}

// ScanAudit decodes one row of AuditColumns.
func ScanAudit(r RowScanner) (store.AuditRow, error) {
	var (
		a        store.AuditRow
		from     sql.NullString
		evidence string
	)
	if err := r.Scan(&a.Seq, &a.EntityType, &a.EntityID, &from, &a.To, &a.ReasonCode, &a.Message, &evidence, &a.Actor, &a.Trigger, ScanUnix(&a.At), &a.HostID, &a.Principal); err != nil {
		return store.AuditRow{}, err
	}
	if from.Valid {
		f := from.String
		a.From = &f
	}
	if evidence != "[]" {
		if err := json.Unmarshal([]byte(evidence), &a.Evidence); err != nil {
			return store.AuditRow{}, fmt.Errorf("decode evidence of row %d: %w", a.Seq, err)
		}
	}
	return a, nil
}

// ScanAttention decodes one row of AttentionColumns (AttentionCandidates'
// partial entity).
func ScanAttention(r RowScanner) (store.Entity, error) {
	var (
		e                           store.Entity
		lifecycle, transitionReason sql.NullString
		health, delivery            string
		reasons                     string
	)
	if err := r.Scan(&e.Type, &e.ID, &e.Label, &lifecycle, &e.Terminal, &transitionReason, &health, &delivery, &reasons,
		ScanUnix(&e.HealthSince), ScanUnix(&e.EndedAt), ScanUnix(&e.LifecycleAt), ScanUnix(&e.CreatedAt), ScanUnix(&e.UpdatedAt)); err != nil {
		return store.Entity{}, err
	}
	if lifecycle.Valid {
		l := lifecycle.String
		e.Lifecycle = &l
	}
	e.Health, e.Delivery = state.Health(health), state.Delivery(delivery)
	if transitionReason.Valid && transitionReason.String != "" {
		var r state.StateReason
		if err := json.Unmarshal([]byte(transitionReason.String), &r); err != nil {
			return store.Entity{}, fmt.Errorf("entity %s/%s: decode transition_reason: %w", e.Type, e.ID, err)
		}
		e.TransitionReason = &r
	}
	if err := json.Unmarshal([]byte(reasons), &e.Reasons); err != nil {
		return store.Entity{}, fmt.Errorf("entity %s/%s: decode reasons: %w", e.Type, e.ID, err)
	}
	return e, nil
}

// ScanDismissal decodes one row of DismissalColumns.
func ScanDismissal(r RowScanner) (store.Dismissal, error) {
	var d store.Dismissal
	err := r.Scan(&d.ID, &d.Fingerprint, &d.EntityType, &d.EntityID, &d.ReasonCode, &d.StatusAtDismissal,
		ScanUnix(&d.SnoozedUntil), ScanUnix(&d.DismissedAt), &d.DismissedBy, &d.ClearOnStatusChange, ScanUnix(&d.CreatedAt), ScanUnix(&d.Occurrence))
	return d, err
}

// OwnerUIDArg is e's owner_uid column: its proven uid, or NULL.
func OwnerUIDArg(e *store.Entity) any {
	if !e.HasOwnerUID {
		return nil
	}
	return int64(e.OwnerUID)
}

// UnixArg is t as a time column holds it: Unix seconds, or NULL for zero.
func UnixArg(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return unixtime.Seconds(t)
}

// UnixCol scans a REAL column of Unix seconds (NULL is the zero time)
// into the time ScanUnix made it for.
type UnixCol struct{ t *time.Time }

// ScanUnix is the scanner of a time column into *t.
func ScanUnix(t *time.Time) UnixCol { return UnixCol{t} }

// Scan implements sql.Scanner.
func (c UnixCol) Scan(v any) error {
	f, err := realColumn(v)
	*c.t = unixtime.FromSeconds(f)
	return err
}

// SecondsArg is d as a duration column holds it (seconds, a double), NULL
// (nil) for zero.
func SecondsArg(d time.Duration) any {
	if d == 0 {
		return nil
	}
	return d.Seconds()
}

// SecondsCol scans a REAL column of seconds (NULL is zero) into the
// duration ScanSeconds made it for.
type SecondsCol struct{ d *time.Duration }

// ScanSeconds is the scanner of a duration column into *d.
func ScanSeconds(d *time.Duration) SecondsCol { return SecondsCol{d} }

// Scan implements sql.Scanner.
func (c SecondsCol) Scan(v any) error {
	f, err := realColumn(v)
	*c.d = unixtime.Duration(f)
	return err
}

// realColumn is a REAL column's number (0 for NULL), avoiding
// sql.NullFloat64's allocation per column.
func realColumn(v any) (float64, error) {
	switch x := v.(type) {
	case nil:
		return 0, nil
	case float64:
		return x, nil
	case int64:
		return float64(x), nil
	}
	return 0, fmt.Errorf("a time column holds %T, not a number", v)
}

// NullInt is i, or NULL (nil) for zero.
func NullInt(i int64) any {
	if i == 0 {
		return nil
	}
	return i
}

// JSONList is v's JSON text, "[]" for a nil list: how list columns
// (reasons, artifacts, lock_files, depends_on, evidence) are stored.
func JSONList(v any) (string, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return "", err
	}
	if s := string(b); s != "null" {
		return s, nil
	}
	return "[]", nil
}

// NewDismissalID makes the random id of a new dismissal row; the fingerprint
// is the identity that matters.
func NewDismissalID() (string, error) {
	var b [12]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("dismissal id: %w", err)
	}
	return "dsm_" + hex.EncodeToString(b[:]), nil
}

// NewTriageBatch makes the random id of one triage action (a
// UpsertDismissals call): the triage log's rows of that action share it.
func NewTriageBatch() (string, error) {
	var b [12]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("triage batch id: %w", err)
	}
	return "tri_" + hex.EncodeToString(b[:]), nil
}

// PrepareDismissals checks and defaults each dismissal of a batch, refusing
// the whole batch before any write when one is incomplete.
func PrepareDismissals(ds []store.Dismissal) ([]store.Dismissal, error) {
	if len(ds) == 0 {
		return nil, fmt.Errorf("upsert dismissals: no dismissal given")
	}
	out := make([]store.Dismissal, len(ds))
	for i, d := range ds {
		if d.Fingerprint == "" || d.EntityType == "" || d.EntityID == "" || d.ReasonCode == "" {
			return nil, fmt.Errorf("upsert dismissal %q: fingerprint, entity type, entity id and reason code are required", d.Fingerprint)
		}
		if d.ID == "" {
			id, err := NewDismissalID()
			if err != nil {
				return nil, fmt.Errorf("upsert dismissal %s: %w", d.Fingerprint, err)
			}
			d.ID = id
		}
		if d.DismissedBy == "" {
			d.DismissedBy = "operator"
		}
		if d.CreatedAt.IsZero() {
			d.CreatedAt = d.DismissedAt
		}
		out[i] = d
	}
	return out, nil
}

// TriageColumns are the columns ScanTriage reads.
const TriageColumns = `seq, batch, at, action, fingerprint, entity_type, entity_id, reason_code, snoozed_until, actor`

// ScanTriage decodes one row of TriageColumns.
func ScanTriage(r RowScanner) (store.TriageEntry, error) {
	var e store.TriageEntry
	err := r.Scan(&e.Seq, &e.Batch, ScanUnix(&e.At), &e.Action, &e.Fingerprint, &e.EntityType, &e.EntityID, &e.ReasonCode,
		ScanUnix(&e.SnoozedUntil), &e.By)
	return e, err
}

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
func EncodeRegistration(e store.Entity) (Registration, error) {
	var r Registration
	var err error
	if r.Artifacts, err = JSONList(e.Artifacts); err != nil {
		return Registration{}, fmt.Errorf("encode artifacts: %w", err)
	}
	r.LockFiles, _ = JSONList(e.LockFiles)
	r.DependsOn, _ = JSONList(e.DependsOn)
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
	Audit store.AuditRow
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
func PlanTransition(cur store.Entity, ch store.Change) (TransitionPlan, error) {
	p := TransitionPlan{Audit: store.AuditRow{EntityType: cur.Type, EntityID: cur.ID, From: cur.Lifecycle, To: ch.To, Actor: ch.Actor, Principal: ch.Principal, Trigger: ch.Trigger, At: ch.At}}
	if ch.Reason != nil {
		p.Audit.ReasonCode, p.Audit.Message, p.Audit.Evidence = string(ch.Reason.Code), ch.Reason.Message, ch.Reason.Evidence
		b, err := json.Marshal(ch.Reason)
		if err != nil {
			return TransitionPlan{}, fmt.Errorf("encode reason: %w", err)
		}
		p.Reason = string(b)
	}
	if ch.Terminal {
		p.EndedAt = UnixArg(ch.At)
	}
	if ch.Starts {
		p.StartedAt = UnixArg(ch.At)
	}
	kept, answered := withoutFlags(cur.Reasons)
	if ch.Delivery != nil || answered {
		if ch.Delivery != nil {
			kept = withDelivery(kept, ch.Delivery, ch.At)
			p.Delivery = string(ch.Delivery.Delivery)
		}
		b, err := JSONList(kept)
		if err != nil {
			return TransitionPlan{}, fmt.Errorf("encode reasons: %w", err)
		}
		p.Reasons = b
	}
	return p, nil
}

// ExitColumns are an exit status's columns: exit_code, or exit_signal
// for a death by signal (the other NULL). Both backends share the rule.
func ExitColumns(x state.ExitStatus) (code, signal any) {
	if x.Signal != 0 {
		return nil, int64(x.Signal)
	}
	return int64(x.Code), nil
}

// withDelivery is reasons with its delivery findings replaced by d's.
func withDelivery(reasons []state.StateReason, d *store.DeliveryRecord, at time.Time) []state.StateReason {
	out := make([]state.StateReason, 0, len(reasons)+len(d.Reasons))
	for _, r := range reasons {
		if _, dim, _ := strings.Cut(string(r.Code), "."); !strings.HasPrefix(dim, "delivery.") {
			out = append(out, r)
		}
	}
	found := slices.Clone(d.Reasons)
	state.CarryOnsets(found, reasons, at)
	return append(out, found...)
}

// withoutFlags drops the findings a transition answers (process_dead_unowned
// ends when anyone moves the entity); answered says whether one was there.
func withoutFlags(reasons []state.StateReason) (kept []state.StateReason, answered bool) {
	kept = make([]state.StateReason, 0, len(reasons))
	for _, r := range reasons {
		if r.Code == state.SystemHealthProcessDeadUnowned {
			answered = true
			continue
		}
		kept = append(kept, r)
	}
	return kept, answered
}

// Applied is the row a transition's write leaves of cur, as read back (but
// LastSeq, Revision), to derive its columns in the same write (ADR-0059).
// It mirrors migration 0008's UPDATE; a driver marks the row stale on drift.
func (p TransitionPlan) Applied(cur store.Entity, ch store.Change) (store.Entity, error) {
	e := cur
	to := ch.To
	e.Lifecycle, e.Terminal = &to, ch.Terminal
	e.TransitionReason = nil
	if s, ok := p.Reason.(string); ok && s != "" {
		var r state.StateReason
		if err := json.Unmarshal([]byte(s), &r); err != nil {
			return store.Entity{}, fmt.Errorf("decode reason: %w", err)
		}
		e.TransitionReason = &r
	}
	at := unixtime.FromSeconds(unixtime.Seconds(ch.At))
	e.LifecycleAt, e.UpdatedAt = at, at
	e.EndedAt = time.Time{}
	if p.EndedAt != nil {
		e.EndedAt = at
	}
	if e.StartedAt.IsZero() && p.StartedAt != nil {
		e.StartedAt = at
	}
	if ch.Timeout != 0 {
		e.Timeout = unixtime.Duration(ch.Timeout.Seconds())
	}
	if ch.TimeoutElapsed != 0 {
		e.TimeoutElapsed = unixtime.Duration(ch.TimeoutElapsed.Seconds())
	}
	if !ch.Terminal {
		e.DeadSince = time.Time{}
	}
	if d, ok := p.Delivery.(string); ok {
		e.Delivery = state.Delivery(d)
	}
	if s, ok := p.Reasons.(string); ok {
		e.Reasons = nil
		if s != "[]" {
			if err := json.Unmarshal([]byte(s), &e.Reasons); err != nil {
				return store.Entity{}, fmt.Errorf("decode reasons: %w", err)
			}
		}
	}
	return e, nil
}
