package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"watchdog/internal/unixtime"
	"watchdog/store"
	"watchdog/store/internal/rowcodec"
)

// RecordObservation writes a probe's findings, and only when they differ
// from what is stored: a sweep over an unchanged host writes nothing. It
// reports whether a row was written.
func (s *Store) RecordObservation(ctx context.Context, typ, id string, o store.Observation) (bool, error) {
	reasons, err := rowcodec.JSONList(o.Reasons)
	if err != nil {
		return false, fmt.Errorf("record observation %s/%s: encode reasons: %w", typ, id, err)
	}
	if o.Runner && o.Exit == nil {
		return false, nil // a runner writes an exit status, or nothing
	}
	var n int64
	// A group write: the monitor records a death while transitions land,
	// and sharing their commit (one fsync) keeps it from halving their
	// throughput.
	err = s.groupWrite(ctx, "record observation "+typ+"/"+id, func(ctx context.Context, tx *sql.Tx) error {
		judged := `health = :health, delivery = :delivery, reasons = :reasons, health_since = :health_since,
		dead_since = :dead_since, observed_at = :at, `
		set, differs, keep := "", "", ""
		judgedDiffers := `health IS NOT :health OR delivery IS NOT :delivery OR reasons IS NOT :reasons
		       OR health_since IS NOT :health_since OR dead_since IS NOT :dead_since`
		switch {
		case o.Runner:
			judged, judgedDiffers = "", "FALSE" // the exit status alone (Observation.Runner)
		case o.DeadSince.IsZero() && o.SeenDeadSince.IsZero():
			keep = " AND dead_since IS NULL" // see Observation.SeenDeadSince
		}
		args := []any{sql.Named("health", o.Health), sql.Named("delivery", o.Delivery), sql.Named("reasons", reasons),
			sql.Named("health_since", rowcodec.UnixArg(o.HealthSince)), sql.Named("dead_since", rowcodec.UnixArg(o.DeadSince)),
			sql.Named("at", unixtime.Seconds(o.At)), sql.Named("type", typ), sql.Named("id", id), sql.Named("seen_seq", o.SeenSeq)}
		if o.Exit != nil {
			code, signal := rowcodec.ExitColumns(*o.Exit)
			set += ", exit_code = :code, exit_signal = :signal, exit_at = :exit_at"
			differs = " OR exit_at IS NULL OR exit_code IS NOT :code OR exit_signal IS NOT :signal) AND (pid = :pid"
			args = append(args, sql.Named("code", code), sql.Named("signal", signal), sql.Named("exit_at", unixtime.Seconds(o.Exit.At)), sql.Named("pid", o.PID))
		}
		res, err := s.txExec(ctx, tx, `UPDATE entities SET `+judged+`updated_at = :at`+set+`
		WHERE type = :type AND id = :id AND last_seq = :seen_seq`+keep+`
		  AND (`+judgedDiffers+differs+`)`, args...)
		if err != nil {
			return err
		}
		if n, err = res.RowsAffected(); err != nil || n == 0 {
			return err
		}
		return s.derive(ctx, tx, typ, id, nil)
	})
	if err != nil {
		return false, fmt.Errorf("record observation %s/%s: %w", typ, id, err)
	}
	return n > 0, nil
}

// RecordHeartbeat stores a heartbeat posted through the API or CLI, with
// its optional progress note.
func (s *Store) RecordHeartbeat(ctx context.Context, typ, id string, at time.Time, progress string) error {
	var n int64
	err := s.writeTx(ctx, func() error {
		// A heartbeat keeps the derived columns, unless items age out from
		// updated_at: -1 carries fresh columns on (migration 0012).
		res, err := s.exec(ctx, `UPDATE entities SET heartbeat_at = ?, heartbeat_progress = ?, updated_at = ?,
		derived_rev = CASE WHEN derived_rev IS revision AND (ended_at IS NOT NULL OR lifecycle_at IS NOT NULL) THEN -1 ELSE derived_rev END
		WHERE type = ? AND id = ?`, rowcodec.UnixArg(at), progress, unixtime.Seconds(at), typ, id)
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
		return fmt.Errorf("entity %s/%s: %w", typ, id, store.ErrNotFound)
	}
	return nil
}
