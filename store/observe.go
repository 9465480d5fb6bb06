package store

import (
	"context"
	"fmt"

	"watchdog/state"
)

// Observation is what a probe found: the persisted health and delivery
// dimensions and the reasons behind them.
type Observation struct {
	Health      state.Health
	Delivery    state.Delivery
	Reasons     []state.StateReason
	HealthSince float64
	// DeadSince is the first time a conclusive death was seen (0 clears it).
	// It is persisted so terminal_grace survives a daemon restart.
	DeadSince float64
	// SeenSeq is the audit sequence of the lifecycle the probe judged; the
	// write is skipped if a transition landed since (the next sweep judges
	// the new lifecycle).
	SeenSeq int64
	At      float64
}

// RecordObservation writes a probe's findings, and only when they differ
// from what is stored: a sweep over an unchanged host writes nothing. It
// reports whether a row was written.
func (s *SQLite) RecordObservation(ctx context.Context, typ, id string, o Observation) (bool, error) {
	reasons, err := jsonText(o.Reasons, "[]")
	if err != nil {
		return false, fmt.Errorf("record observation %s/%s: encode reasons: %w", typ, id, err)
	}
	var n int64
	err = s.writeTx(ctx, func() error {
		res, err := s.db.ExecContext(ctx, `UPDATE entities SET health = ?, delivery = ?, reasons = ?,
		health_since = ?, dead_since = ?, updated_at = ?
		WHERE type = ? AND id = ? AND last_seq = ?
		  AND (health IS NOT ? OR delivery IS NOT ? OR reasons IS NOT ? OR health_since IS NOT ? OR dead_since IS NOT ?)`,
			o.Health, o.Delivery, reasons, nullFloat(o.HealthSince), nullFloat(o.DeadSince), o.At,
			typ, id, o.SeenSeq,
			o.Health, o.Delivery, reasons, nullFloat(o.HealthSince), nullFloat(o.DeadSince))
		if err != nil {
			return err
		}
		n, err = res.RowsAffected()
		return err
	})
	if err != nil {
		return false, fmt.Errorf("record observation %s/%s: %w", typ, id, err)
	}
	return n > 0, nil
}

// RecordHeartbeat stores a heartbeat posted through the API or CLI, with
// its optional progress note.
func (s *SQLite) RecordHeartbeat(ctx context.Context, typ, id string, at float64, progress string) error {
	var n int64
	err := s.writeTx(ctx, func() error {
		res, err := s.db.ExecContext(ctx, `UPDATE entities SET heartbeat_at = ?, heartbeat_progress = ?, updated_at = ?
		WHERE type = ? AND id = ?`, at, progress, at, typ, id)
		if err != nil {
			return err
		}
		n, err = res.RowsAffected()
		return err
	})
	if err != nil {
		return fmt.Errorf("record heartbeat %s/%s: %w", typ, id, err)
	}
	if n == 0 {
		return fmt.Errorf("entity %s/%s: %w", typ, id, ErrNotFound)
	}
	return nil
}
