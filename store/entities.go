package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"watchdog/internal/unixtime"
	"watchdog/state"
)

// Entity is one stored row: the registered fields, the persisted dimensions
// (lifecycle, health, delivery, reasons) and timestamps. Zero numbers,
// times and durations mean "not recorded" and are stored as NULL.
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
	HealthSince      time.Time
	DeadSince        time.Time

	HostID        string
	BootID        string
	PID           int
	PIDStartTime  time.Time
	PIDStartTicks uint64
	SupervisorPID int
	// SupervisorStartTime is the supervisor's start time (zero = unknown).
	SupervisorStartTime time.Time

	HeartbeatFile     string
	HeartbeatAt       time.Time
	HeartbeatProgress string

	// Timeout is the registered timeout; TimeoutElapsed is how long the
	// entity had run when it timed out.
	Timeout        time.Duration
	TimeoutElapsed time.Duration

	ArtifactsRoot string
	// Artifacts may be shared between the entities of one List (identical
	// contracts are decoded once): treat it as read-only.
	Artifacts []state.ArtifactSpec
	LockFiles []string

	ParentType string
	ParentID   string
	DependsOn  []string

	ScheduleCron        string
	ScheduleLastFiredAt time.Time

	Metadata json.RawMessage

	StartedAt   time.Time
	EndedAt     time.Time
	LifecycleAt time.Time
	CreatedAt   time.Time
	UpdatedAt   time.Time

	// Exit is how the entity's process ended, when the kernel said so
	// (RecordExit); nil while it runs, when it was not watched by pidfd, or
	// on a kernel that does not keep it.
	Exit *state.ExitStatus
	// Revision is the store revision of the row's last write (migration
	// 0005's triggers assign it, for every writer): where the change feed
	// (ChangesSince) finds it. 0 for an entity built in memory.
	Revision int64
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
	At         time.Time
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
	// AlsoHostless, with HostID, also keeps the entities recorded with no
	// host (host-less orchestration work: the fleet's leader judges them).
	AlsoHostless bool
	// OpenOnly keeps non-terminal, non-legacy entities.
	OpenOnly bool
	// EndedSince also keeps terminal entities that ended at or after this
	// time (with OpenOnly): the probe's window for stale locks and orphans.
	// An orphan (health orphaned) is kept whatever its age: its process
	// lives, and only the probe can see it go (attention.Lingers).
	EndedSince time.Time
	// ParentType and ParentID, when ParentID is set, keep the children of
	// that entity.
	ParentType string
	ParentID   string
	// DeadOnly keeps the entities with a recorded death (dead_since): all
	// enforcement looks at, filtered in SQL so that its reconciling run
	// does not decode every open row of a big host twice a minute.
	DeadOnly bool
}

const entityColumns = `type, id, label, lifecycle, terminal, last_seq, transition_reason,
	health, delivery, reasons, health_since, dead_since,
	host_id, boot_id, pid, pid_start_time, pid_start_ticks, supervisor_pid,
	heartbeat_file, heartbeat_at, heartbeat_progress, timeout_seconds, timeout_elapsed,
	artifacts_root, artifacts, lock_files, parent_type, parent_id, depends_on,
	schedule_cron, schedule_last_fired_at, metadata,
	started_at, ended_at, lifecycle_at, created_at, updated_at, supervisor_start_time,
	exit_code, exit_signal, exit_at,
	revision`

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
		e                                                  Entity
		lifecycle, transitionReason                        sql.NullString
		reasons, artifacts, lockFiles, dependsOn, metadata string
		pid, supervisor, ticks, exitCode, exitSignal       sql.NullInt64
		exitAt                                             time.Time
		health, delivery                                   string
	)
	err := r.Scan(&e.Type, &e.ID, &e.Label, &lifecycle, &e.Terminal, &e.LastSeq, &transitionReason,
		&health, &delivery, &reasons, unixCol{&e.HealthSince}, unixCol{&e.DeadSince},
		&e.HostID, &e.BootID, &pid, unixCol{&e.PIDStartTime}, &ticks, &supervisor,
		&e.HeartbeatFile, unixCol{&e.HeartbeatAt}, &e.HeartbeatProgress, secondsCol{&e.Timeout}, secondsCol{&e.TimeoutElapsed},
		&e.ArtifactsRoot, &artifacts, &lockFiles, &e.ParentType, &e.ParentID, &dependsOn,
		&e.ScheduleCron, unixCol{&e.ScheduleLastFiredAt}, &metadata,
		unixCol{&e.StartedAt}, unixCol{&e.EndedAt}, unixCol{&e.LifecycleAt}, unixCol{&e.CreatedAt}, unixCol{&e.UpdatedAt}, unixCol{&e.SupervisorStartTime},
		&exitCode, &exitSignal, unixCol{&exitAt}, &e.Revision)
	if err != nil {
		return Entity{}, err
	}
	if lifecycle.Valid {
		l := lifecycle.String
		e.Lifecycle = &l
	}
	e.Health, e.Delivery = state.Health(health), state.Delivery(delivery)
	e.PID, e.PIDStartTicks, e.SupervisorPID = int(pid.Int64), uint64(ticks.Int64), int(supervisor.Int64)
	e.Metadata = json.RawMessage(metadata)
	if !exitAt.IsZero() {
		e.Exit = &state.ExitStatus{Code: int(exitCode.Int64), Signal: int(exitSignal.Int64), At: exitAt}
	}
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

// unixArg is t as a REAL column holds it: Unix seconds, or NULL for the
// zero time. With unixCol it is the store's one pair of time conversions.
func unixArg(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return unixtime.Seconds(t)
}

// unixCol scans a REAL column of Unix seconds (NULL is the zero time).
type unixCol struct{ t *time.Time }

// Scan implements sql.Scanner.
func (c unixCol) Scan(v any) error {
	f, err := realColumn(v)
	*c.t = unixtime.FromSeconds(f)
	return err
}

// secondsArg is d as a REAL column of seconds holds it, NULL for zero.
func secondsArg(d time.Duration) any {
	if d == 0 {
		return nil
	}
	return d.Seconds()
}

// secondsCol scans a REAL column of seconds (NULL is zero).
type secondsCol struct{ d *time.Duration }

// Scan implements sql.Scanner.
func (c secondsCol) Scan(v any) error {
	f, err := realColumn(v)
	*c.d = unixtime.Duration(f)
	return err
}

// realColumn is the number a REAL column's driver value holds, 0 for
// NULL. It takes the driver's two number types itself, where
// sql.NullFloat64 would cost the sweep's store read an allocation per
// column.
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
// audit row (from NULL) in the same transaction. Concurrent registrations
// and transitions share commits (groupWrite).
func (s *SQLite) Register(ctx context.Context, e Entity, actor string, at time.Time) (created bool, err error) {
	err = s.groupWrite(ctx, "register "+e.Type+"/"+e.ID, func(ctx context.Context, tx *sql.Tx) error {
		var e2 error
		created, e2 = s.register(ctx, tx, e, actor, at)
		return e2
	})
	return created, err
}

// register does one registration's reads and writes inside tx; the caller
// commits.
func (s *SQLite) register(ctx context.Context, tx *sql.Tx, e Entity, actor string, at time.Time) (bool, error) {
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

	// The registered fields, named once for both statements below.
	pid := nullInt(int64(e.PID))
	args := []any{
		sql.Named("type", e.Type), sql.Named("id", e.ID), sql.Named("label", e.Label),
		sql.Named("host_id", e.HostID), sql.Named("boot_id", e.BootID),
		sql.Named("pid", pid), sql.Named("pid_start_time", unixArg(e.PIDStartTime)), sql.Named("pid_start_ticks", nullInt(int64(e.PIDStartTicks))),
		sql.Named("supervisor_pid", nullInt(int64(e.SupervisorPID))), sql.Named("supervisor_start_time", unixArg(e.SupervisorStartTime)),
		sql.Named("heartbeat_file", e.HeartbeatFile), sql.Named("timeout_seconds", secondsArg(e.Timeout)),
		sql.Named("artifacts_root", e.ArtifactsRoot),
		sql.Named("parent_type", e.ParentType), sql.Named("parent_id", e.ParentID),
		sql.Named("schedule_cron", e.ScheduleCron), sql.Named("schedule_last_fired_at", unixArg(e.ScheduleLastFiredAt)),
		sql.Named("started_at", unixArg(e.StartedAt)), sql.Named("at", unixtime.Seconds(at)),
	}

	if created {
		var lifecycle, lifecycleAt any
		if e.Lifecycle != nil {
			lifecycle, lifecycleAt = *e.Lifecycle, unixArg(at)
		}
		args = append(args, sql.Named("lifecycle", lifecycle), sql.Named("terminal", e.Terminal),
			sql.Named("health", health), sql.Named("delivery", delivery),
			sql.Named("artifacts", artifacts), sql.Named("lock_files", lockFiles), sql.Named("depends_on", dependsOn),
			sql.Named("metadata", metadata), sql.Named("ended_at", unixArg(e.EndedAt)), sql.Named("lifecycle_at", lifecycleAt))
		_, err = s.txExec(ctx, tx, `INSERT INTO entities (type, id, label, lifecycle, terminal,
			health, delivery, host_id, boot_id, pid, pid_start_time, pid_start_ticks, supervisor_pid,
			heartbeat_file, timeout_seconds, artifacts_root, artifacts, lock_files,
			parent_type, parent_id, depends_on, schedule_cron, schedule_last_fired_at, metadata,
			started_at, ended_at, lifecycle_at, created_at, updated_at, supervisor_start_time)
			VALUES (:type, :id, :label, :lifecycle, :terminal,
			:health, :delivery, :host_id, :boot_id, :pid, :pid_start_time, :pid_start_ticks, :supervisor_pid,
			:heartbeat_file, :timeout_seconds, :artifacts_root, :artifacts, :lock_files,
			:parent_type, :parent_id, :depends_on, :schedule_cron, :schedule_last_fired_at, :metadata,
			:started_at, :ended_at, :lifecycle_at, :at, :at, :supervisor_start_time)`, args...)
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
		// the timestamps the watchdog keeps are left alone; started_at is
		// filled only while unknown, so an upsert never restarts the age
		// heartbeats and slowness count from. A field the
		// document leaves out keeps its value (a re-registration that only
		// renames must not cost the entity its pid, and so its liveness
		// check); a list sent empty ([]) clears it. The pid's identity
		// (start time, ticks, boot id) moves with the pid: a new pid brings
		// its own, never the old one's; nor does it inherit the old one's
		// exit status.
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
		args = append(args, sql.Named("artifacts", keepList(e.Artifacts == nil, artifacts)),
			sql.Named("lock_files", keepList(e.LockFiles == nil, lockFiles)),
			sql.Named("depends_on", keepList(e.DependsOn == nil, dependsOn)),
			sql.Named("metadata", meta))
		_, err = s.txExec(ctx, tx, `UPDATE entities SET label = COALESCE(NULLIF(:label, ''), label),
			host_id = COALESCE(NULLIF(:host_id, ''), host_id),
			boot_id = CASE WHEN :pid IS NULL THEN boot_id ELSE :boot_id END,
			pid_start_time = CASE WHEN :pid IS NULL THEN pid_start_time ELSE :pid_start_time END,
			pid_start_ticks = CASE WHEN :pid IS NULL THEN pid_start_ticks ELSE :pid_start_ticks END,
			exit_code = CASE WHEN :pid IS NULL OR :pid IS pid THEN exit_code ELSE NULL END,
			exit_signal = CASE WHEN :pid IS NULL OR :pid IS pid THEN exit_signal ELSE NULL END,
			exit_at = CASE WHEN :pid IS NULL OR :pid IS pid THEN exit_at ELSE NULL END,
			pid = COALESCE(:pid, pid),
			supervisor_start_time = CASE WHEN :supervisor_pid IS NULL THEN supervisor_start_time ELSE :supervisor_start_time END,
			supervisor_pid = COALESCE(:supervisor_pid, supervisor_pid),
			heartbeat_file = COALESCE(NULLIF(:heartbeat_file, ''), heartbeat_file), timeout_seconds = COALESCE(:timeout_seconds, timeout_seconds),
			artifacts_root = COALESCE(NULLIF(:artifacts_root, ''), artifacts_root), artifacts = COALESCE(:artifacts, artifacts), lock_files = COALESCE(:lock_files, lock_files),
			parent_type = COALESCE(NULLIF(:parent_type, ''), parent_type), parent_id = COALESCE(NULLIF(:parent_id, ''), parent_id), depends_on = COALESCE(:depends_on, depends_on),
			schedule_cron = COALESCE(NULLIF(:schedule_cron, ''), schedule_cron), schedule_last_fired_at = COALESCE(:schedule_last_fired_at, schedule_last_fired_at),
			metadata = COALESCE(:metadata, metadata), started_at = COALESCE(started_at, :started_at), updated_at = :at
			WHERE type = :type AND id = :id`, args...)
		if err != nil {
			return false, fmt.Errorf("register %s/%s: update: %w", e.Type, e.ID, err)
		}
	}
	return created, nil
}

// Get reads one entity.
func (s *SQLite) Get(ctx context.Context, typ, id string) (Entity, error) {
	// Prepared once: parsing this SELECT was a third of a registration's
	// CPU (every write path and every monitor check reads the row first).
	// A store known lost is not read at all: a pooled connection might be
	// opened on the file that replaced it (see lostOr). The latch only, no
	// stat: Get is on every write path and every monitor check, and the
	// loss is latched by the identity watch's event, by every write's
	// check, or by an error read here (lostOr).
	if s.Lost() {
		return Entity{}, fmt.Errorf("read entity %s/%s: %w", typ, id, s.Fault())
	}
	st, err := s.prepared(ctx, selectEntity)
	if err != nil {
		return Entity{}, fmt.Errorf("read entity %s/%s: %w", typ, id, err)
	}
	e, err := scanEntity(st.QueryRowContext(ctx, typ, id))
	if errors.Is(err, sql.ErrNoRows) {
		return Entity{}, fmt.Errorf("entity %s/%s: %w", typ, id, s.lostOr(ErrNotFound))
	}
	if err != nil {
		return Entity{}, fmt.Errorf("read entity %s/%s: %w", typ, id, s.lostOr(err))
	}
	return e, nil
}

// lostOr is err, or the store's loss when its identity is lost: a
// connection the pool opened after the file was replaced reads another
// database ("no such table", or a row that is not there), and the write
// path that read first must answer "not written" (503), not a fault or a
// 404.
func (s *SQLite) lostOr(err error) error {
	if lost := s.usable(); lost != nil {
		return fmt.Errorf("%w (the read said: %v)", lost, err)
	}
	return err
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
	case f.HostID != "" && (f.AlsoRemoteLive || f.AlsoHostless):
		var or []string
		if f.AlsoRemoteLive {
			or = append(or, "(host_id != '' AND terminal = 0 AND lifecycle IS NOT NULL AND (pid > 0 OR heartbeat_at > 0))")
		}
		if f.AlsoHostless {
			or = append(or, "host_id = ''")
		}
		where = append(where, "(host_id = ? OR "+strings.Join(or, " OR ")+")")
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
		if !f.EndedSince.IsZero() {
			where = append(where, "lifecycle IS NOT NULL AND (terminal = 0 OR ended_at >= ? OR health = 'orphaned')")
			args = append(args, unixArg(f.EndedSince))
		} else {
			where = append(where, "terminal = 0 AND lifecycle IS NOT NULL")
		}
	}
	q := "SELECT " + entityColumns + " FROM entities"
	if f.DeadOnly {
		where = append(where, "dead_since IS NOT NULL")
	}
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
		r.EntityType, r.EntityID, from, r.To, r.ReasonCode, r.Message, evidence, r.Actor, r.Trigger, unixtime.Seconds(r.At))
	if err != nil {
		return 0, fmt.Errorf("append audit row: %w", err)
	}
	return res.LastInsertId()
}
