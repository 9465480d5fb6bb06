package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"watchdog/state"
)

// Entity is one stored row: the registered fields, the persisted dimensions
// (lifecycle, health, delivery, reasons) and timestamps. Zero numbers mean
// "not recorded" and are stored as NULL.
type Entity struct {
	Type  string
	ID    string
	Label string
	// Lifecycle is nil for a legacy entity.
	Lifecycle *string
	Terminal  bool
	// LastSeq is the audit row of the last lifecycle change.
	LastSeq          int64
	TransitionReason *state.StateReason
	Health           state.Health
	Delivery         state.Delivery
	Reasons          []state.StateReason
	HealthSince      float64
	DeadSince        float64

	HostID        string
	BootID        string
	PID           int
	PIDStartTime  float64
	PIDStartTicks uint64
	SupervisorPID int
	// SupervisorStartTime is the supervisor's start time (0 = unknown).
	SupervisorStartTime float64

	HeartbeatFile     string
	HeartbeatAt       float64
	HeartbeatProgress string

	TimeoutSeconds float64
	TimeoutElapsed float64

	ArtifactsRoot string
	// Artifacts may be shared between the entities of one List (identical
	// contracts are decoded once): treat it as read-only.
	Artifacts []state.ArtifactSpec
	LockFiles []string

	ParentType string
	ParentID   string
	DependsOn  []string

	ScheduleCron        string
	ScheduleLastFiredAt float64

	Metadata json.RawMessage

	StartedAt   float64
	EndedAt     float64
	LifecycleAt float64
	CreatedAt   float64
	UpdatedAt   float64
}

// LifecycleOr returns the lifecycle, or def for a legacy entity.
func (e Entity) LifecycleOr(def string) string {
	if e.Lifecycle == nil {
		return def
	}
	return *e.Lifecycle
}

// AuditRow is one row of the append-only transitions log.
type AuditRow struct {
	Seq        int64
	EntityType string
	EntityID   string
	// From is nil for the registration row of a new entity.
	From       *string
	To         string
	ReasonCode string
	Message    string
	Evidence   []state.EvidenceRef
	Actor      string
	Trigger    string
	At         float64
}

// Filter selects entities for List. Zero fields do not filter.
type Filter struct {
	Type string
	// HostID limits to entities recorded on that host.
	HostID string
	// AlsoRemoteLive, with HostID, also keeps the open entities of other
	// hosts that have a pid or a posted heartbeat: what a sweep judges of
	// them (by heartbeat). The rest of another host's rows is never read.
	AlsoRemoteLive bool
	// OpenOnly keeps non-terminal, non-legacy entities.
	OpenOnly bool
	// EndedSince also keeps terminal entities that ended at or after this
	// time (with OpenOnly): the probe's window for stale locks and orphans.
	EndedSince float64
	// ParentType and ParentID, when ParentID is set, keep the children of
	// that entity.
	ParentType string
	ParentID   string
}

const entityColumns = `type, id, label, lifecycle, terminal, last_seq, transition_reason,
	health, delivery, reasons, health_since, dead_since,
	host_id, boot_id, pid, pid_start_time, pid_start_ticks, supervisor_pid,
	heartbeat_file, heartbeat_at, heartbeat_progress, timeout_seconds, timeout_elapsed,
	artifacts_root, artifacts, lock_files, parent_type, parent_id, depends_on,
	schedule_cron, schedule_last_fired_at, metadata,
	started_at, ended_at, lifecycle_at, created_at, updated_at, supervisor_start_time`

const selectEntity = "SELECT " + entityColumns + " FROM entities WHERE type = ? AND id = ?"

type rowScanner interface{ Scan(dest ...any) error }

func scanEntity(r rowScanner) (Entity, error) { return scanEntityShared(r, nil) }

// artifactCache shares decoded artifact contracts within one List: specs
// are relative to each entity's artifacts_root, so entities of one kind
// usually carry the very same contract text, and decoding it once per
// sweep instead of once per entity is most of the scan's JSON work. The
// shared slices are read-only (nothing modifies a stored entity's specs in
// place).
type artifactCache map[string][]state.ArtifactSpec

func scanEntityShared(r rowScanner, cache artifactCache) (Entity, error) {
	var (
		e                                                        Entity
		lifecycle, transitionReason                              sql.NullString
		reasons, artifacts, lockFiles, dependsOn, metadata       string
		healthSince, deadSince, pidStart, hbAt, timeout, elapsed sql.NullFloat64
		lastFired, started, ended, lifecycleAt, supStart         sql.NullFloat64
		pid, supervisor, ticks                                   sql.NullInt64
		health, delivery                                         string
	)
	err := r.Scan(&e.Type, &e.ID, &e.Label, &lifecycle, &e.Terminal, &e.LastSeq, &transitionReason,
		&health, &delivery, &reasons, &healthSince, &deadSince,
		&e.HostID, &e.BootID, &pid, &pidStart, &ticks, &supervisor,
		&e.HeartbeatFile, &hbAt, &e.HeartbeatProgress, &timeout, &elapsed,
		&e.ArtifactsRoot, &artifacts, &lockFiles, &e.ParentType, &e.ParentID, &dependsOn,
		&e.ScheduleCron, &lastFired, &metadata,
		&started, &ended, &lifecycleAt, &e.CreatedAt, &e.UpdatedAt, &supStart)
	if err != nil {
		return Entity{}, err
	}
	if lifecycle.Valid {
		l := lifecycle.String
		e.Lifecycle = &l
	}
	e.Health, e.Delivery = state.Health(health), state.Delivery(delivery)
	e.HealthSince, e.DeadSince = healthSince.Float64, deadSince.Float64
	e.PID, e.PIDStartTime, e.PIDStartTicks, e.SupervisorPID = int(pid.Int64), pidStart.Float64, uint64(ticks.Int64), int(supervisor.Int64)
	e.HeartbeatAt, e.TimeoutSeconds, e.TimeoutElapsed = hbAt.Float64, timeout.Float64, elapsed.Float64
	e.ScheduleLastFiredAt, e.StartedAt, e.EndedAt, e.LifecycleAt = lastFired.Float64, started.Float64, ended.Float64, lifecycleAt.Float64
	e.Metadata = json.RawMessage(metadata)
	e.SupervisorStartTime = supStart.Float64
	if transitionReason.Valid && transitionReason.String != "" {
		var r state.StateReason
		if err := json.Unmarshal([]byte(transitionReason.String), &r); err != nil {
			return Entity{}, fmt.Errorf("entity %s/%s: decode transition_reason: %w", e.Type, e.ID, err)
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
			return Entity{}, fmt.Errorf("entity %s/%s: decode %s: %w", e.Type, e.ID, f.name, err)
		}
	}
	if cache != nil && len(e.Artifacts) > 0 && artifacts != "[]" {
		cache[artifacts] = e.Artifacts
	}
	return e, nil
}

func nullFloat(f float64) any {
	if f == 0 {
		return nil
	}
	return f
}

func nullInt(i int64) any {
	if i == 0 {
		return nil
	}
	return i
}

func jsonText(v any, empty string) (string, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return "", err
	}
	if s := string(b); s != "null" {
		return s, nil
	}
	return empty, nil
}

// Register inserts a new entity, or updates the registered (non-lifecycle)
// fields of an existing one: re-registering never changes a lifecycle,
// only a transition does. A new entity with a lifecycle gets its first
// audit row (from NULL) in the same transaction.
func (s *SQLite) Register(ctx context.Context, e Entity, actor string, at float64) (created bool, err error) {
	err = s.writeTx(ctx, func() error {
		var e2 error
		created, e2 = s.register(ctx, e, actor, at)
		return e2
	})
	return created, err
}

func (s *SQLite) register(ctx context.Context, e Entity, actor string, at float64) (bool, error) {
	artifacts, err := jsonText(e.Artifacts, "[]")
	if err != nil {
		return false, fmt.Errorf("register %s/%s: encode artifacts: %w", e.Type, e.ID, err)
	}
	lockFiles, _ := jsonText(e.LockFiles, "[]")
	dependsOn, _ := jsonText(e.DependsOn, "[]")
	metadata := "{}"
	if len(e.Metadata) > 0 && string(e.Metadata) != "null" {
		metadata = string(e.Metadata)
	}
	health, delivery := e.Health, e.Delivery
	if health == "" {
		health = state.HealthUnknown
	}
	if delivery == "" {
		delivery = state.DeliveryUnknown
	}

	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return false, fmt.Errorf("register %s/%s: begin: %w", e.Type, e.ID, err)
	}
	defer tx.Rollback()

	var exists int
	row, err := s.txQueryRow(ctx, tx, "SELECT 1 FROM entities WHERE type = ? AND id = ?", e.Type, e.ID)
	if err != nil {
		return false, fmt.Errorf("register %s/%s: %w", e.Type, e.ID, err)
	}
	switch err := row.Scan(&exists); {
	case errors.Is(err, sql.ErrNoRows):
	case err != nil:
		return false, fmt.Errorf("register %s/%s: %w", e.Type, e.ID, err)
	}
	created := exists == 0

	if created {
		var lifecycle any
		var lifecycleAt, startedAt any
		if e.Lifecycle != nil {
			lifecycle, lifecycleAt = *e.Lifecycle, at
		}
		startedAt = nullFloat(e.StartedAt)
		_, err = s.txExec(ctx, tx, `INSERT INTO entities (type, id, label, lifecycle, terminal,
			health, delivery, host_id, boot_id, pid, pid_start_time, pid_start_ticks, supervisor_pid,
			heartbeat_file, timeout_seconds, artifacts_root, artifacts, lock_files,
			parent_type, parent_id, depends_on, schedule_cron, schedule_last_fired_at, metadata,
			started_at, ended_at, lifecycle_at, created_at, updated_at, supervisor_start_time)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			e.Type, e.ID, e.Label, lifecycle, e.Terminal,
			health, delivery, e.HostID, e.BootID, nullInt(int64(e.PID)), nullFloat(e.PIDStartTime), nullInt(int64(e.PIDStartTicks)), nullInt(int64(e.SupervisorPID)),
			e.HeartbeatFile, nullFloat(e.TimeoutSeconds), e.ArtifactsRoot, artifacts, lockFiles,
			e.ParentType, e.ParentID, dependsOn, e.ScheduleCron, nullFloat(e.ScheduleLastFiredAt), metadata,
			startedAt, nullFloat(e.EndedAt), lifecycleAt, at, at, nullFloat(e.SupervisorStartTime))
		if err != nil {
			return false, fmt.Errorf("register %s/%s: insert: %w", e.Type, e.ID, err)
		}
		if e.Lifecycle != nil {
			seq, err := s.insertAudit(ctx, tx, AuditRow{
				EntityType: e.Type, EntityID: e.ID, To: *e.Lifecycle,
				Message: "registered", Actor: actor, At: at,
			})
			if err != nil {
				return false, fmt.Errorf("register %s/%s: %w", e.Type, e.ID, err)
			}
			if _, err := s.txExec(ctx, tx, "UPDATE entities SET last_seq = ? WHERE type = ? AND id = ?", seq, e.Type, e.ID); err != nil {
				return false, fmt.Errorf("register %s/%s: link audit row: %w", e.Type, e.ID, err)
			}
		}
	} else {
		// Only what the caller registers: the dimensions, the lifecycle and
		// the timestamps the watchdog keeps are left alone. A field the
		// document leaves out keeps its value (a re-registration that only
		// renames must not cost the entity its pid, and so its liveness
		// check); a list sent empty ([]) clears it. The pid's identity
		// (start time, ticks, boot id) moves with the pid: a new pid brings
		// its own, never the old one's.
		keepList := func(isNil bool, text string) any {
			if isNil {
				return nil
			}
			return text
		}
		var meta any
		if len(e.Metadata) > 0 && string(e.Metadata) != "null" {
			meta = metadata
		}
		_, err = s.txExec(ctx, tx, `UPDATE entities SET label = COALESCE(NULLIF(?, ''), label),
			host_id = COALESCE(NULLIF(?, ''), host_id),
			boot_id = CASE WHEN ? IS NULL THEN boot_id ELSE ? END,
			pid_start_time = CASE WHEN ? IS NULL THEN pid_start_time ELSE ? END,
			pid_start_ticks = CASE WHEN ? IS NULL THEN pid_start_ticks ELSE ? END,
			pid = COALESCE(?, pid),
			supervisor_start_time = CASE WHEN ? IS NULL THEN supervisor_start_time ELSE ? END,
			supervisor_pid = COALESCE(?, supervisor_pid),
			heartbeat_file = COALESCE(NULLIF(?, ''), heartbeat_file), timeout_seconds = COALESCE(?, timeout_seconds),
			artifacts_root = COALESCE(NULLIF(?, ''), artifacts_root), artifacts = COALESCE(?, artifacts), lock_files = COALESCE(?, lock_files),
			parent_type = COALESCE(NULLIF(?, ''), parent_type), parent_id = COALESCE(NULLIF(?, ''), parent_id), depends_on = COALESCE(?, depends_on),
			schedule_cron = COALESCE(NULLIF(?, ''), schedule_cron), schedule_last_fired_at = COALESCE(?, schedule_last_fired_at),
			metadata = COALESCE(?, metadata), started_at = COALESCE(?, started_at), updated_at = ?
			WHERE type = ? AND id = ?`,
			e.Label, e.HostID,
			nullInt(int64(e.PID)), e.BootID,
			nullInt(int64(e.PID)), nullFloat(e.PIDStartTime),
			nullInt(int64(e.PID)), nullInt(int64(e.PIDStartTicks)),
			nullInt(int64(e.PID)),
			nullInt(int64(e.SupervisorPID)), nullFloat(e.SupervisorStartTime), nullInt(int64(e.SupervisorPID)),
			e.HeartbeatFile, nullFloat(e.TimeoutSeconds),
			e.ArtifactsRoot, keepList(e.Artifacts == nil, artifacts), keepList(e.LockFiles == nil, lockFiles),
			e.ParentType, e.ParentID, keepList(e.DependsOn == nil, dependsOn),
			e.ScheduleCron, nullFloat(e.ScheduleLastFiredAt),
			meta, nullFloat(e.StartedAt), at, e.Type, e.ID)
		if err != nil {
			return false, fmt.Errorf("register %s/%s: update: %w", e.Type, e.ID, err)
		}
	}
	if err := tx.Commit(); err != nil {
		return false, fmt.Errorf("register %s/%s: commit: %w", e.Type, e.ID, err)
	}
	return created, nil
}

// Get reads one entity.
func (s *SQLite) Get(ctx context.Context, typ, id string) (Entity, error) {
	e, err := scanEntity(s.db.QueryRowContext(ctx, selectEntity, typ, id))
	if errors.Is(err, sql.ErrNoRows) {
		return Entity{}, fmt.Errorf("entity %s/%s: %w", typ, id, ErrNotFound)
	}
	if err != nil {
		return Entity{}, fmt.Errorf("read entity %s/%s: %w", typ, id, err)
	}
	return e, nil
}

// List reads the entities a filter selects, ordered by type and id.
func (s *SQLite) List(ctx context.Context, f Filter) ([]Entity, error) {
	var where []string
	var args []any
	if f.Type != "" {
		where = append(where, "type = ?")
		args = append(args, f.Type)
	}
	switch {
	case f.HostID != "" && f.AlsoRemoteLive:
		where = append(where, "(host_id = ? OR (host_id != '' AND terminal = 0 AND lifecycle IS NOT NULL AND (pid > 0 OR heartbeat_at > 0)))")
		args = append(args, f.HostID)
	case f.HostID != "":
		where = append(where, "host_id = ?")
		args = append(args, f.HostID)
	}
	if f.ParentID != "" {
		// parent_id != '' lets SQLite pick the partial idx_entities_parent
		// when it judges that cheaper than the primary key's type prefix.
		where = append(where, "parent_type = ? AND parent_id = ? AND parent_id != ''")
		args = append(args, f.ParentType, f.ParentID)
	}
	if f.OpenOnly {
		if f.EndedSince > 0 {
			where = append(where, "lifecycle IS NOT NULL AND (terminal = 0 OR ended_at >= ?)")
			args = append(args, f.EndedSince)
		} else {
			where = append(where, "terminal = 0 AND lifecycle IS NOT NULL")
		}
	}
	q := "SELECT " + entityColumns + " FROM entities"
	if len(where) > 0 {
		q += " WHERE " + strings.Join(where, " AND ")
	}
	q += " ORDER BY type, id"
	rows, err := s.db.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("list entities: %w", err)
	}
	defer rows.Close()
	var out []Entity
	cache := artifactCache{}
	for rows.Next() {
		e, err := scanEntityShared(rows, cache)
		if err != nil {
			return nil, fmt.Errorf("list entities: %w", err)
		}
		out = append(out, e)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list entities: %w", err)
	}
	return out, nil
}

// Transitions reads all of an entity's audit rows, oldest first. The API
// pages them instead (LatestTransitions, TransitionsAfter).
func (s *SQLite) Transitions(ctx context.Context, typ, id string) ([]AuditRow, error) {
	return s.queryAudit(ctx, typ, id, `SELECT `+auditColumns+`
		FROM transitions WHERE entity_type = ? AND entity_id = ? ORDER BY seq`, typ, id)
}

func (s *SQLite) insertAudit(ctx context.Context, tx *sql.Tx, r AuditRow) (int64, error) {
	evidence, err := jsonText(r.Evidence, "[]")
	if err != nil {
		return 0, fmt.Errorf("encode evidence: %w", err)
	}
	var from any
	if r.From != nil {
		from = *r.From
	}
	res, err := s.txExec(ctx, tx, `INSERT INTO transitions (entity_type, entity_id, from_lifecycle, to_lifecycle,
		reason_code, message, evidence, actor, trigger_name, at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		r.EntityType, r.EntityID, from, r.To, r.ReasonCode, r.Message, evidence, r.Actor, r.Trigger, r.At)
	if err != nil {
		return 0, fmt.Errorf("append audit row: %w", err)
	}
	return res.LastInsertId()
}
