package postgres

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"watchdog/internal/unixtime"
	"watchdog/store"
	"watchdog/store/internal/rowcodec"
)

const selectEntity = "SELECT " + rowcodec.EntityColumns + " FROM entities WHERE type = $1 AND id = $2"

// applyTransitionSQL is the one call of a transition (migration 0008),
// with positional parameters: the statement's text is the same on every
// call, so pgx prepares it once per connection and no named-argument
// rewriting runs per call.
const applyTransitionSQL = "SELECT " + rowcodec.EntityColumns + ` FROM watchdog_apply_transition_by(
	$1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19,
	$20, $21, $22, $23, $24::double precision, $25)`

// sameColumns reports whether a and b are the same derived columns (the
// revision aside: the trigger stamps the written row's).
func sameColumns(a, b store.Derived) bool {
	return a.Type == b.Type && a.ID == b.ID && a.Rank == b.Rank && a.Severity == b.Severity &&
		a.Items == b.Items && a.Expires.Equal(b.Expires)
}

// Register inserts a new entity, or updates the registered (non-lifecycle)
// fields of an existing one, with sqlite.Store.Register's rules: a
// re-registration never changes a lifecycle, a field left out keeps its
// value, a new pid brings its own identity and no exit status. A new
// entity with a lifecycle gets its first audit row in the same
// transaction.
func (s *Store) Register(ctx context.Context, e store.Entity, actor string, at time.Time) (created bool, err error) {
	reg, err := rowcodec.EncodeRegistration(e)
	if err != nil {
		return false, fmt.Errorf("register %s/%s: %w", e.Type, e.ID, err)
	}
	// The commit tells the entity's host: the one registered, which an
	// update keeps when none is given (then every host is told, the
	// stored one unread).
	t := &told{}
	err = s.writeTx(ctx, t, func(tx pgx.Tx) error {
		var e2 error
		if created, e2 = register(ctx, tx, e, reg, actor, at); e2 != nil {
			return e2
		}
		if created || e.HostID != "" {
			t.add(e.HostID)
		} else {
			t.all = true
		}
		return deriveTx(ctx, tx, e.Type, e.ID)
	})
	if err != nil {
		return false, fmt.Errorf("register %s/%s: %w", e.Type, e.ID, err)
	}
	return created, nil
}

func register(ctx context.Context, tx pgx.Tx, e store.Entity, reg rowcodec.Registration, actor string, at time.Time) (bool, error) {
	args := pgx.NamedArgs{
		"type": e.Type, "id": e.ID, "label": e.Label, "host_id": e.HostID, "boot_id": e.BootID,
		"pid": rowcodec.NullInt(int64(e.PID)), "pid_start_time": rowcodec.UnixArg(e.PIDStartTime), "pid_start_ticks": rowcodec.NullInt(int64(e.PIDStartTicks)),
		"supervisor_pid": rowcodec.NullInt(int64(e.SupervisorPID)), "supervisor_start_time": rowcodec.UnixArg(e.SupervisorStartTime),
		"heartbeat_file": e.HeartbeatFile, "timeout_seconds": rowcodec.SecondsArg(e.Timeout), "artifacts_root": e.ArtifactsRoot,
		"parent_type": e.ParentType, "parent_id": e.ParentID,
		"schedule_cron": e.ScheduleCron, "schedule_last_fired_at": rowcodec.UnixArg(e.ScheduleLastFiredAt),
		"started_at": rowcodec.UnixArg(e.StartedAt), "at": unixtime.Seconds(at),
		"owner": e.Owner, "owner_uid": rowcodec.OwnerUIDArg(&e),
	}
	// The insert is tried first (ON CONFLICT DO NOTHING), the update only
	// when the entity exists: no read to tell them apart, one round trip
	// fewer.
	{
		var lifecycle, lifecycleAt any
		if e.Lifecycle != nil {
			lifecycle, lifecycleAt = *e.Lifecycle, rowcodec.UnixArg(at)
		}
		args["lifecycle"], args["terminal"] = lifecycle, e.Terminal
		args["health"], args["delivery"] = string(reg.Health), string(reg.Delivery)
		args["artifacts"], args["lock_files"], args["depends_on"] = reg.Artifacts, reg.LockFiles, reg.DependsOn
		args["metadata"], args["ended_at"], args["lifecycle_at"] = reg.Metadata, rowcodec.UnixArg(e.EndedAt), lifecycleAt
		tag, err := tx.Exec(ctx, `INSERT INTO entities (type, id, label, lifecycle, terminal,
			health, delivery, host_id, boot_id, pid, pid_start_time, pid_start_ticks, supervisor_pid,
			heartbeat_file, timeout_seconds, artifacts_root, artifacts, lock_files,
			parent_type, parent_id, depends_on, schedule_cron, schedule_last_fired_at, metadata,
			started_at, ended_at, lifecycle_at, created_at, updated_at, supervisor_start_time, owner, owner_uid)
			VALUES (@type, @id, @label, @lifecycle, @terminal,
			@health, @delivery, @host_id, @boot_id, @pid, @pid_start_time, @pid_start_ticks, @supervisor_pid,
			@heartbeat_file, @timeout_seconds, @artifacts_root, @artifacts, @lock_files,
			@parent_type, @parent_id, @depends_on, @schedule_cron, @schedule_last_fired_at, @metadata,
			@started_at, @ended_at, @lifecycle_at, @at, @at, @supervisor_start_time, @owner, @owner_uid)
			ON CONFLICT (type, id) DO NOTHING`, args)
		if err != nil {
			return false, fmt.Errorf("insert: %w", err)
		}
		if tag.RowsAffected() == 1 {
			if e.Lifecycle != nil {
				// The first audit row and the entity's link to it in one
				// statement (the link changes no lifecycle: the audit
				// guard does not fire).
				// No evidence: '[]', as rowcodec.JSONList writes a nil list.
				// The row's host is the entity's, as inserted above.
				_, err = tx.Exec(ctx, `WITH a AS (INSERT INTO transitions (seq, entity_type, entity_id, from_lifecycle, to_lifecycle,
					reason_code, message, evidence, actor, trigger_name, at, host_id, principal) VALUES (0, $1, $2, NULL, $3, '', 'registered', '[]', $4, '', $5,
					COALESCE((SELECT host_id FROM entities WHERE type = $1 AND id = $2), ''), $6) RETURNING seq)
					UPDATE entities SET last_seq = (SELECT seq FROM a) WHERE type = $1 AND id = $2`,
					e.Type, e.ID, *e.Lifecycle, actor, unixtime.Seconds(at), e.Owner)
				if err != nil {
					return false, fmt.Errorf("append and link the audit row: %w", err)
				}
			}
			return true, nil
		}
	}
	keep := func(isNil bool, text string) any {
		if isNil {
			return nil
		}
		return text
	}
	var meta any
	if reg.HasMetadata {
		meta = reg.Metadata
	}
	args["artifacts"], args["lock_files"] = keep(e.Artifacts == nil, reg.Artifacts), keep(e.LockFiles == nil, reg.LockFiles)
	args["depends_on"], args["metadata"] = keep(e.DependsOn == nil, reg.DependsOn), meta
	// The casts name the parameters' types where PostgreSQL cannot infer
	// them (a parameter only compared with NULL).
	args["owner_guard"] = e.OwnerGuard
	tag, err := tx.Exec(ctx, `UPDATE entities SET label = COALESCE(NULLIF(@label::text, ''), label),
		host_id = COALESCE(NULLIF(@host_id::text, ''), host_id),
		boot_id = CASE WHEN @pid::bigint IS NULL THEN boot_id ELSE @boot_id::text END,
		pid_start_time = CASE WHEN @pid::bigint IS NULL THEN pid_start_time ELSE @pid_start_time::double precision END,
		pid_start_ticks = CASE WHEN @pid::bigint IS NULL THEN pid_start_ticks ELSE @pid_start_ticks::bigint END,
		exit_code = CASE WHEN @pid::bigint IS NULL OR @pid::bigint IS NOT DISTINCT FROM pid THEN exit_code ELSE NULL END,
		exit_signal = CASE WHEN @pid::bigint IS NULL OR @pid::bigint IS NOT DISTINCT FROM pid THEN exit_signal ELSE NULL END,
		exit_at = CASE WHEN @pid::bigint IS NULL OR @pid::bigint IS NOT DISTINCT FROM pid THEN exit_at ELSE NULL END,
		pid = COALESCE(@pid::bigint, pid),
		supervisor_start_time = CASE WHEN @supervisor_pid::bigint IS NULL THEN supervisor_start_time ELSE @supervisor_start_time::double precision END,
		supervisor_pid = COALESCE(@supervisor_pid::bigint, supervisor_pid),
		heartbeat_file = COALESCE(NULLIF(@heartbeat_file::text, ''), heartbeat_file), timeout_seconds = COALESCE(@timeout_seconds::double precision, timeout_seconds),
		artifacts_root = COALESCE(NULLIF(@artifacts_root::text, ''), artifacts_root), artifacts = COALESCE(@artifacts::text, artifacts), lock_files = COALESCE(@lock_files::text, lock_files),
		parent_type = COALESCE(NULLIF(@parent_type::text, ''), parent_type), parent_id = COALESCE(NULLIF(@parent_id::text, ''), parent_id), depends_on = COALESCE(@depends_on::text, depends_on),
		schedule_cron = COALESCE(NULLIF(@schedule_cron::text, ''), schedule_cron), schedule_last_fired_at = COALESCE(@schedule_last_fired_at::double precision, schedule_last_fired_at),
		metadata = COALESCE(@metadata::text, metadata), started_at = COALESCE(started_at, @started_at::double precision), updated_at = @at
		WHERE type = @type AND id = @id AND (NOT @owner_guard::boolean OR owner_uid IS NOT DISTINCT FROM @owner_uid::bigint)`, args)
	if err != nil {
		return false, fmt.Errorf("update: %w", err)
	}
	if tag.RowsAffected() == 0 {
		return false, store.ErrNotOwner
	}
	return false, nil
}

// ApplyTransition is the store half of the one write path, with SQLite's
// outcome. It reads the entity, lets decide judge it, then calls
// watchdog_apply_transition_derived (migration 0008, ADR-0059): one transaction,
// compare-and-set on the revision read. Any write in between fails it, writing
// nothing, and it reads and decides again; no lock is held between the trips.
func (s *Store) ApplyTransition(ctx context.Context, typ, id string, decide store.Decider) (before, after store.Entity, err error) {
	for attempt := 1; ; attempt++ {
		var written bool
		before, after, written, err = s.tryTransition(ctx, typ, id, decide)
		if err != nil || written {
			return before, after, err
		}
		if attempt == maxTransitionAttempts {
			return before, store.Entity{}, fmt.Errorf("transition %s/%s: the entity changed under each of %d attempts: %w", typ, id, attempt, store.ErrConflict)
		}
	}
}

// maxTransitionAttempts bounds ApplyTransition's read-decide-write rounds
// on an entity written under it each time (a heartbeat flood): each lost
// round means another write landed, so the store is making progress.
const maxTransitionAttempts = 100

// tryTransition is one round of ApplyTransition; written is false (and err
// nil) when the compare-and-set found the entity changed since the read.
func (s *Store) tryTransition(ctx context.Context, typ, id string, decide store.Decider) (before, after store.Entity, written bool, err error) {
	cur, err := rowcodec.ScanEntity(s.pool.QueryRow(ctx, selectEntity, typ, id))
	if errors.Is(err, pgx.ErrNoRows) {
		return store.Entity{}, store.Entity{}, false, fmt.Errorf("entity %s/%s: %w", typ, id, store.ErrNotFound)
	}
	if err != nil {
		return store.Entity{}, store.Entity{}, false, fmt.Errorf("transition %s/%s: read: %w", typ, id, classify(err))
	}
	ch, err := decide(cur)
	if err != nil {
		return cur, store.Entity{}, false, err
	}
	plan, err := rowcodec.PlanTransition(cur, ch)
	if err != nil {
		return cur, store.Entity{}, false, fmt.Errorf("transition %s/%s: %w", typ, id, err)
	}
	evidence, err := rowcodec.JSONList(plan.Audit.Evidence)
	if err != nil {
		return cur, store.Entity{}, false, fmt.Errorf("transition %s/%s: encode evidence: %w", typ, id, err)
	}
	var from any
	if cur.Lifecycle != nil {
		from = *cur.Lifecycle
	}
	// The derived columns of the row as the call will leave it: the
	// compare-and-set writes over exactly cur, so they are known before
	// the write, and one statement writes both (ADR-0059).
	fn := store.Derivation()
	var cols store.Derived
	withCols := false
	if fn != nil {
		if next, err := plan.Applied(cur, ch); err == nil {
			cols, withCols = fn(next), true
		}
	}
	// A transition never moves its entity to another host.
	err = s.writeOne(ctx, &told{hosts: []string{cur.HostID}}, func(q querier) error {
		written = false // an attempt writeOne retries starts afresh
		rows, err := q.Query(ctx, applyTransitionSQL,
			typ, id, cur.Revision,
			from, ch.To, plan.Audit.ReasonCode, plan.Audit.Message,
			evidence, plan.Audit.Actor, plan.Audit.Trigger, unixtime.Seconds(ch.At),
			ch.Terminal, plan.Reason, plan.EndedAt, plan.StartedAt,
			rowcodec.SecondsArg(ch.Timeout), rowcodec.SecondsArg(ch.TimeoutElapsed),
			plan.Delivery, plan.Reasons,
			withCols, cols.Rank, string(cols.Severity), cols.Items, rowcodec.UnixArg(cols.Expires), plan.Audit.Principal)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			if after, err = rowcodec.ScanEntity(rows); err != nil {
				return err
			}
			written = true
		}
		return rows.Err()
	})
	if err == nil && written && fn != nil {
		// The row as written is the judge of the columns written with it:
		// when they differ (Applied drifted from the function), they are
		// written again, a statement more, as before migration 0008.
		switch got := fn(after); {
		case !withCols:
			s.derived(ctx, after) // the row is stale: written as before
		case !sameColumns(got, cols):
			s.rederived(ctx, got)
		}
	}
	if err != nil {
		return cur, store.Entity{}, false, fmt.Errorf("transition %s/%s: %w", typ, id, err)
	}
	return cur, after, written, nil
}

// Get reads one entity.
func (s *Store) Get(ctx context.Context, typ, id string) (store.Entity, error) {
	e, err := rowcodec.ScanEntity(s.pool.QueryRow(ctx, selectEntity, typ, id))
	if errors.Is(err, pgx.ErrNoRows) {
		return store.Entity{}, fmt.Errorf("entity %s/%s: %w", typ, id, store.ErrNotFound)
	}
	if err != nil {
		return store.Entity{}, fmt.Errorf("read entity %s/%s: %w", typ, id, classify(err))
	}
	return e, nil
}

// List reads the entities a filter selects, ordered by type and id (in
// byte order, as SQLite's: COLLATE "C").
func (s *Store) List(ctx context.Context, f store.Filter) ([]store.Entity, error) {
	q, args := listQuery(f)
	rows, err := s.pool.Query(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("list entities: %w", classify(err))
	}
	defer rows.Close()
	if f.RevisionsOnly {
		out, err := rowcodec.ScanRevisions(rows, f.Limit)
		if err != nil {
			return nil, fmt.Errorf("list entities: %w", classify(err))
		}
		return out, nil
	}
	var out []store.Entity
	var sc rowcodec.EntityScanner
	for rows.Next() {
		e, err := sc.Scan(rows)
		if err != nil {
			return nil, fmt.Errorf("list entities: %w", err)
		}
		out = append(out, e)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list entities: %w", classify(err))
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
	arg := func(v any) string {
		args = append(args, v)
		return "$" + strconv.Itoa(len(args))
	}
	if f.Type != "" {
		where = append(where, "type = "+arg(f.Type))
	}
	switch {
	case f.HostID != "" && (f.AlsoRemoteLive || f.AlsoHostless):
		or := []string{"host_id = " + arg(f.HostID)}
		if f.AlsoRemoteLive {
			or = append(or, "(host_id != '' AND NOT terminal AND lifecycle IS NOT NULL AND (pid > 0 OR heartbeat_at > 0))")
		}
		if f.AlsoHostless {
			or = append(or, "host_id = ''")
		}
		where = append(where, "("+strings.Join(or, " OR ")+")")
	case f.HostID != "":
		where = append(where, "host_id = "+arg(f.HostID))
	}
	if f.ParentID != "" {
		where = append(where, "parent_type = "+arg(f.ParentType)+" AND parent_id = "+arg(f.ParentID))
	}
	if f.OpenOnly {
		if !f.EndedSince.IsZero() {
			where = append(where, rowcodec.InWindow("NOT terminal", arg(rowcodec.UnixArg(f.EndedSince))))
		} else {
			where = append(where, "NOT terminal AND lifecycle IS NOT NULL")
		}
	}
	if f.DeadOnly {
		where = append(where, "dead_since IS NOT NULL")
	}
	if f.After.Type != "" {
		// In the order's collation: byte order, as SQLite's.
		where = append(where, `(type COLLATE "C", id COLLATE "C") > (`+arg(f.After.Type)+", "+arg(f.After.ID)+")")
	}
	cols := rowcodec.EntityColumns
	if f.RevisionsOnly {
		cols = rowcodec.RevisionColumns
	}
	var q string
	if !f.PhantomBefore.IsZero() {
		// reap_phantoms' candidates: the phantoms by idx_entities_phantom
		// (migration 0011), whose condition these terms imply, and the
		// open entities of the reconciled types by idx_entities_open_by_host.
		cut := arg(rowcodec.UnixArg(f.PhantomBefore))
		phantoms := append(slices.Clip(where), "health IN ('process_dead', 'orphaned')", "created_at <= "+cut,
			"COALESCE(lifecycle_at, 0) <= "+cut, "COALESCE(heartbeat_at, 0) <= "+cut, "COALESCE(started_at, 0) <= "+cut)
		q = "SELECT " + cols + " FROM entities WHERE "
		if len(f.Reconciled) == 0 {
			q += strings.Join(phantoms, " AND ")
		} else {
			types := arg(f.Reconciled)
			q = "SELECT * FROM (" + q + strings.Join(append(phantoms, "type <> ALL("+types+")"), " AND ") +
				" UNION ALL SELECT " + cols + " FROM entities WHERE " + strings.Join(append(where, "type = ANY("+types+")"), " AND ") + ") AS c"
		}
	} else {
		q = "SELECT " + cols + " FROM entities"
		if len(where) > 0 {
			q += " WHERE " + strings.Join(where, " AND ")
		}
	}
	q += ` ORDER BY type COLLATE "C", id COLLATE "C"`
	if f.Limit > 0 {
		q += " LIMIT " + arg(f.Limit)
	}
	return q, args
}

// AttentionCandidates reads the entities that may have attention items at
// a time whose failure window starts at since, filling only the fields the
// queue reads (sqlite.Store.AttentionCandidates' rule).
func (s *Store) AttentionCandidates(ctx context.Context, since time.Time) ([]store.Entity, error) {
	rows, err := s.pool.Query(ctx, "SELECT "+rowcodec.AttentionColumns+" FROM entities WHERE "+rowcodec.InWindow("NOT terminal", "$1"),
		unixtime.Seconds(since))
	if err != nil {
		return nil, fmt.Errorf("read attention candidates: %w", classify(err))
	}
	defer rows.Close()
	var out []store.Entity
	for rows.Next() {
		e, err := rowcodec.ScanAttention(rows)
		if err != nil {
			return nil, fmt.Errorf("read attention candidates: %w", err)
		}
		out = append(out, e)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read attention candidates: %w", classify(err))
	}
	return out, nil
}

// Transitions reads all of an entity's audit rows, oldest first.
func (s *Store) Transitions(ctx context.Context, typ, id string) ([]store.AuditRow, error) {
	rows, err := s.queryAudit(ctx, "SELECT "+rowcodec.AuditColumns+" FROM transitions WHERE entity_type = $1 AND entity_id = $2 ORDER BY seq", typ, id)
	if err != nil {
		return nil, fmt.Errorf("read transitions of %s/%s: %w", typ, id, err)
	}
	return rows, nil
}

// LatestTransitions reads an entity's last n audit rows, oldest first, and
// how many it has in all.
func (s *Store) LatestTransitions(ctx context.Context, typ, id string, n int) ([]store.AuditRow, int, error) {
	var total int
	if err := s.pool.QueryRow(ctx, "SELECT COUNT(*) FROM transitions WHERE entity_type = $1 AND entity_id = $2", typ, id).Scan(&total); err != nil {
		return nil, 0, fmt.Errorf("count transitions of %s/%s: %w", typ, id, classify(err))
	}
	rows, err := s.queryAudit(ctx, "SELECT "+rowcodec.AuditColumns+` FROM (SELECT * FROM transitions
		WHERE entity_type = $1 AND entity_id = $2 ORDER BY seq DESC LIMIT $3) t ORDER BY seq`, typ, id, n)
	if err != nil {
		return nil, 0, fmt.Errorf("read transitions of %s/%s: %w", typ, id, err)
	}
	return rows, total, nil
}

// TransitionsAfter reads at most limit audit rows of an entity whose seq
// is greater than after, oldest first: one page of its history.
func (s *Store) TransitionsAfter(ctx context.Context, typ, id string, after int64, limit int) ([]store.AuditRow, error) {
	rows, err := s.queryAudit(ctx, "SELECT "+rowcodec.AuditColumns+` FROM transitions
		WHERE entity_type = $1 AND entity_id = $2 AND seq > $3 ORDER BY seq LIMIT $4`, typ, id, after, limit)
	if err != nil {
		return nil, fmt.Errorf("read transitions of %s/%s: %w", typ, id, err)
	}
	return rows, nil
}

// queryAudit runs a query selecting AuditColumns; never nil on success.
func (s *Store) queryAudit(ctx context.Context, q string, args ...any) ([]store.AuditRow, error) {
	rows, err := s.pool.Query(ctx, q, args...)
	if err != nil {
		return nil, classify(err)
	}
	defer rows.Close()
	out := []store.AuditRow{}
	for rows.Next() {
		r, err := rowcodec.ScanAudit(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, classify(err)
	}
	return out, nil
}

// RecordObservation writes a probe's findings, only when they differ from
// what is stored and only while the lifecycle is the one judged (SeenSeq).
// It reports whether a row was written.
func (s *Store) RecordObservation(ctx context.Context, typ, id string, o store.Observation) (bool, error) {
	reasons, err := rowcodec.JSONList(o.Reasons)
	if err != nil {
		return false, fmt.Errorf("record observation %s/%s: encode reasons: %w", typ, id, err)
	}
	if o.Runner && o.Exit == nil {
		return false, nil // a runner writes an exit status, or nothing
	}
	judged := `health = @health, delivery = @delivery, reasons = @reasons,
		health_since = @health_since::double precision, dead_since = @dead_since::double precision, `
	judgedDiffers := `health IS DISTINCT FROM @health OR delivery IS DISTINCT FROM @delivery OR reasons IS DISTINCT FROM @reasons
		       OR health_since IS DISTINCT FROM @health_since::double precision OR dead_since IS DISTINCT FROM @dead_since::double precision`
	set, differs, keep := "", "", ""
	switch {
	case o.Runner:
		judged, judgedDiffers = "", "FALSE" // the exit status alone (Observation.Runner)
	case o.DeadSince.IsZero() && o.SeenDeadSince.IsZero():
		keep = " AND dead_since IS NULL" // see Observation.SeenDeadSince
	}
	args := pgx.NamedArgs{
		"health": string(o.Health), "delivery": string(o.Delivery), "reasons": reasons,
		"health_since": rowcodec.UnixArg(o.HealthSince), "dead_since": rowcodec.UnixArg(o.DeadSince),
		"at": unixtime.Seconds(o.At), "type": typ, "id": id, "seen_seq": o.SeenSeq,
	}
	if o.Exit != nil {
		args["code"], args["signal"] = rowcodec.ExitColumns(*o.Exit)
		args["exit_at"] = unixtime.Seconds(o.Exit.At)
		set = ", exit_code = @code::bigint, exit_signal = @signal::bigint, exit_at = @exit_at"
		differs = " OR exit_at IS NULL OR exit_code IS DISTINCT FROM @code::bigint OR exit_signal IS DISTINCT FROM @signal::bigint) AND (pid = @pid"
		args["pid"] = int64(o.PID)
	}
	update := `UPDATE entities SET ` + judged + `updated_at = @at` + set + `
		WHERE type = @type AND id = @id AND last_seq = @seen_seq` + keep + `
		  AND (` + judgedDiffers + differs + `)`
	fn := store.Derivation()
	var n int64
	var after store.Entity
	t := &told{}
	err = s.writeOne(ctx, t, func(q querier) error {
		if fn == nil {
			var err error
			n, err = execTold(ctx, q, t, update, args)
			return err
		}
		// The row as this write left it, to derive its columns from: no
		// read after the write (ADR-0059).
		n = 0
		rows, err := q.Query(ctx, update+" RETURNING "+rowcodec.EntityColumns, args)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			if after, err = rowcodec.ScanEntity(rows); err != nil {
				return err
			}
			t.add(after.HostID)
			n++
		}
		return rows.Err()
	})
	if err != nil {
		return false, fmt.Errorf("record observation %s/%s: %w", typ, id, err)
	}
	if n > 0 && fn != nil {
		s.derived(ctx, after)
	}
	return n > 0, nil
}

// RecordHeartbeat stores a posted heartbeat with its optional progress note.
func (s *Store) RecordHeartbeat(ctx context.Context, typ, id string, at time.Time, progress string) error {
	var n int64
	t := &told{}
	err := s.writeOne(ctx, t, func(q querier) error {
		// A heartbeat leaves the derived columns as they are, unless the
		// items would age out from updated_at: -1 carries fresh columns
		// to the new revision (migration 0007), a stale row stays stale.
		var err error
		n, err = execTold(ctx, q, t, `UPDATE entities SET heartbeat_at = $1, heartbeat_progress = $2, updated_at = $3,
		derived_rev = CASE WHEN derived_rev IS NOT DISTINCT FROM revision AND (ended_at IS NOT NULL OR lifecycle_at IS NOT NULL) THEN -1 ELSE derived_rev END
		WHERE type = $4 AND id = $5`, rowcodec.UnixArg(at), progress, unixtime.Seconds(at), typ, id)
		return err
	})
	if err != nil {
		return fmt.Errorf("record heartbeat %s/%s: %w", typ, id, err)
	}
	if n == 0 {
		return fmt.Errorf("entity %s/%s: %w", typ, id, store.ErrNotFound)
	}
	return nil
}
