package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"watchdog/internal/unixtime"
	"watchdog/state"
	"watchdog/store"
	"watchdog/store/internal/rowcodec"
)

// selectEntity reads one entity row by type and id.
const selectEntity = "SELECT " + rowcodec.EntityColumns + " FROM entities WHERE type = ? AND id = ?"

// Register inserts a new entity, or updates the registered fields of an
// existing one: never its lifecycle. A new entity's first audit row is
// written in the same transaction; writes share commits (groupWrite).
func (s *Store) Register(ctx context.Context, e store.Entity, actor string, at time.Time) (created bool, err error) {
	err = s.groupWrite(ctx, "register "+e.Type+"/"+e.ID, func(ctx context.Context, tx *sql.Tx) error {
		var e2 error
		created, e2 = s.register(ctx, tx, e, actor, at)
		return e2
	})
	return created, err
}

// register does one registration's reads and writes inside tx; the caller
// commits.
func (s *Store) register(ctx context.Context, tx *sql.Tx, e store.Entity, actor string, at time.Time) (bool, error) {
	artifacts, err := rowcodec.JSONList(e.Artifacts)
	if err != nil {
		return false, fmt.Errorf("register %s/%s: encode artifacts: %w", e.Type, e.ID, err)
	}
	lockFiles, _ := rowcodec.JSONList(e.LockFiles)
	dependsOn, _ := rowcodec.JSONList(e.DependsOn)
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
	pid := rowcodec.NullInt(int64(e.PID))
	args := []any{
		sql.Named("type", e.Type), sql.Named("id", e.ID), sql.Named("label", e.Label),
		sql.Named("host_id", e.HostID), sql.Named("boot_id", e.BootID),
		sql.Named("pid", pid), sql.Named("pid_start_time", rowcodec.UnixArg(e.PIDStartTime)), sql.Named("pid_start_ticks", rowcodec.NullInt(int64(e.PIDStartTicks))),
		sql.Named("supervisor_pid", rowcodec.NullInt(int64(e.SupervisorPID))), sql.Named("supervisor_start_time", rowcodec.UnixArg(e.SupervisorStartTime)),
		sql.Named("heartbeat_file", e.HeartbeatFile), sql.Named("timeout_seconds", rowcodec.SecondsArg(e.Timeout)),
		sql.Named("artifacts_root", e.ArtifactsRoot),
		sql.Named("parent_type", e.ParentType), sql.Named("parent_id", e.ParentID),
		sql.Named("schedule_cron", e.ScheduleCron), sql.Named("schedule_last_fired_at", rowcodec.UnixArg(e.ScheduleLastFiredAt)),
		sql.Named("started_at", rowcodec.UnixArg(e.StartedAt)), sql.Named("at", unixtime.Seconds(at)),
		sql.Named("owner", e.Owner), sql.Named("owner_uid", rowcodec.OwnerUIDArg(&e)),
	}

	if created {
		var lifecycle, lifecycleAt any
		if e.Lifecycle != nil {
			lifecycle, lifecycleAt = *e.Lifecycle, rowcodec.UnixArg(at)
		}
		args = append(args, sql.Named("lifecycle", lifecycle), sql.Named("terminal", e.Terminal),
			sql.Named("health", health), sql.Named("delivery", delivery),
			sql.Named("artifacts", artifacts), sql.Named("lock_files", lockFiles), sql.Named("depends_on", dependsOn),
			sql.Named("metadata", metadata), sql.Named("ended_at", rowcodec.UnixArg(e.EndedAt)), sql.Named("lifecycle_at", lifecycleAt))
		_, err = s.txExec(ctx, tx, `INSERT INTO entities (type, id, label, lifecycle, terminal,
			health, delivery, host_id, boot_id, pid, pid_start_time, pid_start_ticks, supervisor_pid,
			heartbeat_file, timeout_seconds, artifacts_root, artifacts, lock_files,
			parent_type, parent_id, depends_on, schedule_cron, schedule_last_fired_at, metadata,
			started_at, ended_at, lifecycle_at, created_at, updated_at, supervisor_start_time, owner, owner_uid)
			VALUES (:type, :id, :label, :lifecycle, :terminal,
			:health, :delivery, :host_id, :boot_id, :pid, :pid_start_time, :pid_start_ticks, :supervisor_pid,
			:heartbeat_file, :timeout_seconds, :artifacts_root, :artifacts, :lock_files,
			:parent_type, :parent_id, :depends_on, :schedule_cron, :schedule_last_fired_at, :metadata,
			:started_at, :ended_at, :lifecycle_at, :at, :at, :supervisor_start_time, :owner, :owner_uid)`, args...)
		if err != nil {
			return false, fmt.Errorf("register %s/%s: insert: %w", e.Type, e.ID, err)
		}
		if e.Lifecycle != nil {
			seq, err := s.insertAudit(ctx, tx, store.AuditRow{
				EntityType: e.Type, EntityID: e.ID, To: *e.Lifecycle,
				Message: "registered", Actor: actor, Principal: e.Owner, At: at,
			})
			if err != nil {
				return false, fmt.Errorf("register %s/%s: %w", e.Type, e.ID, err)
			}
			if _, err := s.txExec(ctx, tx, "UPDATE entities SET last_seq = ? WHERE type = ? AND id = ?", seq, e.Type, e.ID); err != nil {
				return false, fmt.Errorf("register %s/%s: link audit row: %w", e.Type, e.ID, err)
			}
		}
	} else {
		// Only registered fields: started_at only while unknown, an omitted field
		// keeps its value, [] clears a list, and a new pid brings its own identity.
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
		res, err := s.txExec(ctx, tx, `UPDATE entities SET label = COALESCE(NULLIF(:label, ''), label),
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
			WHERE type = :type AND id = :id AND (NOT :owner_guard OR owner_uid IS :owner_uid)`, append(args, sql.Named("owner_guard", e.OwnerGuard))...)
		if err != nil {
			return false, fmt.Errorf("register %s/%s: update: %w", e.Type, e.ID, err)
		}
		if n, err := res.RowsAffected(); err == nil && n == 0 {
			return false, fmt.Errorf("register %s/%s: %w", e.Type, e.ID, store.ErrNotOwner)
		}
	}
	if err := s.derive(ctx, tx, e.Type, e.ID, nil); err != nil {
		return false, fmt.Errorf("register %s/%s: %w", e.Type, e.ID, err)
	}
	return created, nil
}

// Get reads one entity.
func (s *Store) Get(ctx context.Context, typ, id string) (store.Entity, error) {
	// Prepared once (parsing was a third of a registration's CPU). A store known
	// lost is not read: a pooled connection may open the replacing file (lostOr).
	if s.Lost() {
		return store.Entity{}, fmt.Errorf("read entity %s/%s: %w", typ, id, s.Fault())
	}
	st, err := s.prepared(ctx, selectEntity)
	if err != nil {
		return store.Entity{}, fmt.Errorf("read entity %s/%s: %w", typ, id, err)
	}
	e, err := rowcodec.ScanEntity(st.QueryRowContext(ctx, typ, id))
	if errors.Is(err, sql.ErrNoRows) {
		return store.Entity{}, fmt.Errorf("entity %s/%s: %w", typ, id, s.lostOr(store.ErrNotFound))
	}
	if err != nil {
		return store.Entity{}, fmt.Errorf("read entity %s/%s: %w", typ, id, s.lostOr(err))
	}
	return e, nil
}

// lostOr is err, or the store's loss when its identity is lost: a connection
// opened on a replaced file must answer 503, not a fault or a 404.
func (s *Store) lostOr(err error) error {
	if lost := s.usable(); lost != nil {
		return fmt.Errorf("%w (the read said: %v)", lost, err)
	}
	return err
}

// List reads the entities a filter selects, ordered by type and id.
func (s *Store) List(ctx context.Context, f store.Filter) ([]store.Entity, error) {
	q, args := listQuery(f)
	rows, err := s.db.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("list entities: %w", err)
	}
	defer rows.Close()
	if f.RevisionsOnly {
		out, err := rowcodec.ScanRevisions(rows, f.Limit)
		if err != nil {
			return nil, fmt.Errorf("list entities: %w", err)
		}
		return out, nil
	}
	var out []store.Entity
	var scan rowcodec.EntityScanner
	for rows.Next() {
		e, err := scan.Scan(rows)
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

// listQuery is List's query and its arguments.
func listQuery(f store.Filter) (string, []any) {
	var where []string
	var args []any
	if !f.PhantomBefore.IsZero() {
		f.OpenOnly, f.EndedSince = true, time.Time{} // candidates are open
	}
	// Walk the primary key from the after-key: without statistics SQLite would
	// sort the host's rows per page (n²). A unary + keeps a term off its index.
	host, terminal := "host_id", "terminal"
	if (f.Limit > 0 || f.After.Type != "") && f.PhantomBefore.IsZero() {
		host, terminal = "+host_id", "+terminal"
	}
	if f.Type != "" {
		where = append(where, "type = ?")
		args = append(args, f.Type)
	}
	switch {
	case f.HostID != "" && f.AlsoRemoteLive:
		or := "(" + host + " != '' AND " + terminal + " = 0 AND lifecycle IS NOT NULL AND (pid > 0 OR heartbeat_at > 0))"
		if f.AlsoHostless {
			or += " OR " + host + " = ''"
		}
		where = append(where, "("+host+" = ? OR "+or+")")
		args = append(args, f.HostID)
	case f.HostID != "" && f.AlsoHostless:
		// An IN, not an OR: a partial index's condition holds for an IN's
		// terms, where SQLite reads an OR alone.
		where = append(where, host+" IN (?, '')")
		args = append(args, f.HostID)
	case f.HostID != "":
		where = append(where, host+" = ?")
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
			where = append(where, rowcodec.InWindow(terminal+" = 0", "?"))
			args = append(args, rowcodec.UnixArg(f.EndedSince))
		} else {
			where = append(where, terminal+" = 0 AND lifecycle IS NOT NULL")
		}
	}
	cols := rowcodec.EntityColumns
	if f.RevisionsOnly {
		cols = rowcodec.RevisionColumns
	}
	if f.DeadOnly {
		where = append(where, "dead_since IS NOT NULL")
	}
	if f.After.Type != "" {
		// A row value: SQLite walks the primary key from the key on.
		where = append(where, "(type, id) > (?, ?)")
		args = append(args, f.After.Type, f.After.ID)
	}
	var q string
	if !f.PhantomBefore.IsZero() {
		q, args = phantomQuery(cols, where, args, f)
	} else {
		q = "SELECT " + cols + " FROM entities"
		if len(where) > 0 {
			q += " WHERE " + strings.Join(where, " AND ")
		}
	}
	q += " ORDER BY type, id"
	if f.Limit > 0 {
		q += " LIMIT ?"
		args = append(args, f.Limit)
	}
	return q, args
}

// phantomQuery is reap_phantoms' candidates under where: two selects, each
// held to its index (idx_entities_phantom, idx_entities_open_by_host).
func phantomQuery(cols string, where []string, args []any, f store.Filter) (string, []any) {
	cut := rowcodec.UnixArg(f.PhantomBefore)
	phantoms := append(slices.Clip(where), "health IN ('process_dead', 'orphaned')",
		"created_at <= ?", "IFNULL(lifecycle_at, 0) <= ?", "IFNULL(heartbeat_at, 0) <= ?", "IFNULL(started_at, 0) <= ?")
	all := append(slices.Clip(args), cut, cut, cut, cut)
	q := "SELECT " + cols + " FROM entities INDEXED BY idx_entities_phantom WHERE "
	if len(f.Reconciled) == 0 {
		return q + strings.Join(phantoms, " AND "), all
	}
	marks := strings.TrimSuffix(strings.Repeat("?, ", len(f.Reconciled)), ", ")
	phantoms = append(phantoms, "type NOT IN ("+marks+")")
	reconciled := append(slices.Clip(where), "type IN ("+marks+")")
	for _, t := range f.Reconciled {
		all = append(all, t)
	}
	all = append(all, args...)
	for _, t := range f.Reconciled {
		all = append(all, t)
	}
	return "SELECT * FROM (" + q + strings.Join(phantoms, " AND ") +
		" UNION ALL SELECT " + cols + " FROM entities INDEXED BY idx_entities_open_by_host WHERE " + strings.Join(reconciled, " AND ") + ")", all
}

// Transitions reads all of an entity's audit rows, oldest first. The API
// pages them instead (LatestTransitions, TransitionsAfter).
func (s *Store) Transitions(ctx context.Context, typ, id string) ([]store.AuditRow, error) {
	return s.queryAudit(ctx, typ, id, `SELECT `+rowcodec.AuditColumns+`
		FROM transitions WHERE entity_type = ? AND entity_id = ? ORDER BY seq`, typ, id)
}

func (s *Store) insertAudit(ctx context.Context, tx *sql.Tx, r store.AuditRow) (int64, error) {
	evidence, err := rowcodec.JSONList(r.Evidence)
	if err != nil {
		return 0, fmt.Errorf("encode evidence: %w", err)
	}
	var from any
	if r.From != nil {
		from = *r.From
	}
	// The row's host is its entity's, read by the same statement: a
	// registration inserts the entity first, a transition reads it first.
	res, err := s.txExec(ctx, tx, `INSERT INTO transitions (entity_type, entity_id, from_lifecycle, to_lifecycle,
		reason_code, message, evidence, actor, trigger_name, at, host_id, principal) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10,
		IFNULL((SELECT host_id FROM entities WHERE type = ?1 AND id = ?2), ''), ?11)`,
		r.EntityType, r.EntityID, from, r.To, r.ReasonCode, r.Message, evidence, r.Actor, r.Trigger, unixtime.Seconds(r.At), r.Principal)
	if err != nil {
		return 0, fmt.Errorf("append audit row: %w", err)
	}
	return res.LastInsertId()
}
