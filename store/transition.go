package store

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
)

// Change is what a Decider decided: the new lifecycle and its audit row.
type Change struct {
	To       string
	Terminal bool
	// Starts says the move starts the work: started_at is stamped unless
	// already set (the type's graph decides which state does).
	Starts bool
	// Reason is stored on the entity as the reason of its current
	// lifecycle, and its code, message and evidence go to the audit row.
	Reason  *state.StateReason
	Actor   string
	Trigger string
	At      time.Time
	// Timeout and TimeoutElapsed are recorded with a timed_out transition
	// (zero leaves the stored value alone).
	Timeout        time.Duration
	TimeoutElapsed time.Duration
	// Delivery, when set, is the artifact contract's verdict at the end,
	// stored with it: the delivery, and its findings in place of the
	// stored delivery findings (the other findings stay).
	Delivery *DeliveryRecord
}

// DeliveryRecord is a contract's verdict as a transition records it.
type DeliveryRecord struct {
	Delivery state.Delivery
	// Reasons are the delivery findings (run.delivery.*), with evidence.
	Reasons []state.StateReason
}

// withDelivery is reasons with its delivery findings replaced by d's.
func withDelivery(reasons []state.StateReason, d *DeliveryRecord, at time.Time) []state.StateReason {
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

// withoutFlags is reasons without the findings a transition answers: the
// flag that asks the operator to record an end for a dead process
// (system.health.process_dead_unowned) is over the moment anyone moves the
// entity, not at the next sweep. answered reports whether one was there.
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

// Decider validates a transition against the entity as it is stored at the
// moment of writing, inside the write transaction, and returns the change
// or an error that aborts the transaction.
type Decider func(current Entity) (Change, error)

// ApplyTransition is the store half of the one write path: inside one
// write transaction it reads the entity, lets decide validate the change
// against that very row, appends the audit row, and updates the lifecycle
// with a compare-and-set on the lifecycle and audit sequence it read. A
// crash at any instant leaves either both writes or neither.
//
// Concurrent calls share a commit (groupWrite): each runs in its own
// savepoint of one transaction, so each keeps its own read, decision,
// compare-and-set and audit row and gets its own answer, and the group
// pays for one fsync. A nil error still means durable.
//
// No other code may UPDATE the lifecycle column; a test greps for it, and
// the entities_lifecycle_audited trigger refuses a change without its
// audit row.
func (s *SQLite) ApplyTransition(ctx context.Context, typ, id string, decide Decider) (before, after Entity, err error) {
	err = s.groupWrite(ctx, "transition "+typ+"/"+id, func(ctx context.Context, tx *sql.Tx) error {
		var e error
		before, after, e = s.applyTransition(ctx, tx, typ, id, decide)
		return e
	})
	if err != nil {
		// The decider's view of the entity goes back with its refusal
		// (the write path reports the stored lifecycle), never a write
		// that did not commit.
		return before, Entity{}, err
	}
	return before, after, nil
}

// applyTransition does one transition's reads and writes inside tx; the
// caller commits.
func (s *SQLite) applyTransition(ctx context.Context, tx *sql.Tx, typ, id string, decide Decider) (Entity, Entity, error) {
	row, err := s.txQueryRow(ctx, tx, selectEntity, typ, id)
	if err != nil {
		return Entity{}, Entity{}, fmt.Errorf("transition %s/%s: %w", typ, id, err)
	}
	cur, err := scanEntity(row)
	if errors.Is(err, sql.ErrNoRows) {
		return Entity{}, Entity{}, fmt.Errorf("entity %s/%s: %w", typ, id, ErrNotFound)
	}
	if err != nil {
		return Entity{}, Entity{}, fmt.Errorf("transition %s/%s: read: %w", typ, id, err)
	}
	ch, err := decide(cur)
	if err != nil {
		return cur, Entity{}, err
	}

	plan, err := PlanTransition(cur, ch)
	if err != nil {
		return cur, Entity{}, fmt.Errorf("transition %s/%s: %w", typ, id, err)
	}
	seq, err := s.insertAudit(ctx, tx, plan.Audit)
	if err != nil {
		return cur, Entity{}, fmt.Errorf("transition %s/%s: %w", typ, id, err)
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
		sql.Named("timeout_seconds", secondsArg(ch.Timeout)), sql.Named("timeout_elapsed", secondsArg(ch.TimeoutElapsed)),
		sql.Named("delivery", delivery), sql.Named("reasons", reasons),
		sql.Named("type", typ), sql.Named("id", id), sql.Named("from", cur.Lifecycle), sql.Named("last_seq", cur.LastSeq))
	if err != nil {
		return cur, Entity{}, fmt.Errorf("transition %s/%s: update: %w", typ, id, err)
	}
	if n, err := res.RowsAffected(); err != nil || n != 1 {
		return cur, Entity{}, fmt.Errorf("transition %s/%s: lifecycle changed underneath: %w", typ, id, ErrConflict)
	}
	row, err = s.txQueryRow(ctx, tx, selectEntity, typ, id)
	if err != nil {
		return cur, Entity{}, fmt.Errorf("transition %s/%s: %w", typ, id, err)
	}
	after, err := scanEntity(row)
	if err != nil {
		return cur, Entity{}, fmt.Errorf("transition %s/%s: re-read: %w", typ, id, err)
	}
	return cur, after, nil
}
