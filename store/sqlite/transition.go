package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"watchdog/internal/unixtime"
	"watchdog/store"
	"watchdog/store/internal/rowcodec"
)

// ApplyTransition is the store half of the one write path: in one write
// transaction it reads the entity, lets decide validate against that row,
// appends the audit row and compare-and-sets the lifecycle on the seq read, so a
// crash leaves both writes or neither. Calls share a commit in savepoints
// (groupWrite); nil still means durable. Only this UPDATEs lifecycle (a
// trigger refuses a change without its audit row).
func (s *Store) ApplyTransition(ctx context.Context, typ, id string, decide store.Decider) (before, after store.Entity, err error) {
	err = s.groupWrite(ctx, "transition "+typ+"/"+id, func(ctx context.Context, tx *sql.Tx) error {
		var e error
		before, after, e = s.applyTransition(ctx, tx, typ, id, decide)
		return e
	})
	if err != nil {
		// The decider's view of the entity goes back with its refusal
		// (the write path reports the stored lifecycle), never a write
		// that did not commit.
		return before, store.Entity{}, err
	}
	return before, after, nil
}

// applyTransition does one transition's reads and writes inside tx; the
// caller commits.
func (s *Store) applyTransition(ctx context.Context, tx *sql.Tx, typ, id string, decide store.Decider) (store.Entity, store.Entity, error) {
	row, err := s.txQueryRow(ctx, tx, selectEntity, typ, id)
	if err != nil {
		return store.Entity{}, store.Entity{}, fmt.Errorf("transition %s/%s: %w", typ, id, err)
	}
	cur, err := rowcodec.ScanEntity(row)
	if errors.Is(err, sql.ErrNoRows) {
		return store.Entity{}, store.Entity{}, fmt.Errorf("entity %s/%s: %w", typ, id, store.ErrNotFound)
	}
	if err != nil {
		return store.Entity{}, store.Entity{}, fmt.Errorf("transition %s/%s: read: %w", typ, id, err)
	}
	ch, err := decide(cur)
	if err != nil {
		return cur, store.Entity{}, err
	}

	plan, err := rowcodec.PlanTransition(cur, ch)
	if err != nil {
		return cur, store.Entity{}, fmt.Errorf("transition %s/%s: %w", typ, id, err)
	}
	seq, err := s.insertAudit(ctx, tx, plan.Audit)
	if err != nil {
		return cur, store.Entity{}, fmt.Errorf("transition %s/%s: %w", typ, id, err)
	}
	reasonJSON, endedAt, startedAt, delivery, reasons := plan.Reason, plan.EndedAt, plan.StartedAt, plan.Delivery, plan.Reasons
	res, err := s.txExec(ctx, tx, `UPDATE entities SET lifecycle = :to, terminal = :terminal, last_seq = :seq,
		transition_reason = :reason, lifecycle_at = :at, ended_at = :ended_at, started_at = COALESCE(started_at, :started_at),
		timeout_seconds = COALESCE(:timeout_seconds, timeout_seconds), timeout_elapsed = COALESCE(:timeout_elapsed, timeout_elapsed),
		dead_since = CASE WHEN :terminal THEN dead_since ELSE NULL END,
		delivery = COALESCE(:delivery, delivery), reasons = COALESCE(:reasons, reasons), updated_at = :at
		WHERE type = :type AND id = :id AND lifecycle IS :from AND last_seq = :last_seq`,
		sql.Named("to", ch.To), sql.Named("terminal", ch.Terminal), sql.Named("seq", seq),
		sql.Named("reason", reasonJSON), sql.Named("at", unixtime.Seconds(ch.At)),
		sql.Named("ended_at", endedAt), sql.Named("started_at", startedAt),
		sql.Named("timeout_seconds", rowcodec.SecondsArg(ch.Timeout)), sql.Named("timeout_elapsed", rowcodec.SecondsArg(ch.TimeoutElapsed)),
		sql.Named("delivery", delivery), sql.Named("reasons", reasons),
		sql.Named("type", typ), sql.Named("id", id), sql.Named("from", cur.Lifecycle), sql.Named("last_seq", cur.LastSeq))
	if err != nil {
		return cur, store.Entity{}, fmt.Errorf("transition %s/%s: update: %w", typ, id, err)
	}
	if n, err := res.RowsAffected(); err != nil || n != 1 {
		return cur, store.Entity{}, fmt.Errorf("transition %s/%s: lifecycle changed underneath: %w", typ, id, store.ErrConflict)
	}
	row, err = s.txQueryRow(ctx, tx, selectEntity, typ, id)
	if err != nil {
		return cur, store.Entity{}, fmt.Errorf("transition %s/%s: %w", typ, id, err)
	}
	after, err := rowcodec.ScanEntity(row)
	if err != nil {
		return cur, store.Entity{}, fmt.Errorf("transition %s/%s: re-read: %w", typ, id, err)
	}
	if err := s.derive(ctx, tx, typ, id, &after); err != nil {
		return cur, store.Entity{}, fmt.Errorf("transition %s/%s: %w", typ, id, err)
	}
	return cur, after, nil
}
