package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"math"
	"time"

	"watchdog/internal/unixtime"
	"watchdog/store"
	"watchdog/store/internal/rowcodec"
)

// UpsertDismissal inserts or replaces the dismissal of d.Fingerprint, keeping
// the row's id and created_at. It is a batch of one (UpsertDismissals).
func (s *Store) UpsertDismissal(ctx context.Context, d store.Dismissal) error {
	_, err := s.UpsertDismissals(ctx, []store.Dismissal{d})
	return err
}

// UpsertDismissals writes ds and one attention_triage row each under one new
// batch id, in one group-commit savepoint, so a bulk snooze lands whole or not at all.
func (s *Store) UpsertDismissals(ctx context.Context, ds []store.Dismissal) (string, error) {
	ds, err := rowcodec.PrepareDismissals(ds)
	if err != nil {
		return "", err
	}
	batch, err := rowcodec.NewTriageBatch()
	if err != nil {
		return "", err
	}
	label := "upsert dismissal " + ds[0].Fingerprint
	if len(ds) > 1 {
		label = fmt.Sprintf("upsert %d dismissals", len(ds))
	}
	err = s.groupWrite(ctx, label, func(ctx context.Context, tx *sql.Tx) error {
		for _, d := range ds {
			if _, err := s.txExec(ctx, tx, `INSERT INTO attention_dismissals (id, fingerprint, entity_type, entity_id,
			reason_code, status_at_dismissal, snoozed_until, dismissed_at, dismissed_by, clear_on_status_change, created_at, occurrence_at)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
			ON CONFLICT (fingerprint) DO UPDATE SET
				entity_type = excluded.entity_type, entity_id = excluded.entity_id,
				reason_code = excluded.reason_code, status_at_dismissal = excluded.status_at_dismissal,
				snoozed_until = excluded.snoozed_until, dismissed_at = excluded.dismissed_at,
				dismissed_by = excluded.dismissed_by, clear_on_status_change = excluded.clear_on_status_change,
				occurrence_at = excluded.occurrence_at`,
				d.ID, d.Fingerprint, d.EntityType, d.EntityID,
				d.ReasonCode, d.StatusAtDismissal, rowcodec.UnixArg(d.SnoozedUntil), unixtime.Seconds(d.DismissedAt), d.DismissedBy,
				d.ClearOnStatusChange, unixtime.Seconds(d.CreatedAt), rowcodec.UnixArg(d.Occurrence)); err != nil {
				return fmt.Errorf("dismissal %s: %w", d.Fingerprint, err)
			}
			e := store.TriageOf(d, batch)
			if _, err := s.txExec(ctx, tx, `INSERT INTO attention_triage (batch, at, action, fingerprint, entity_type, entity_id,
			reason_code, snoozed_until, actor) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
				e.Batch, unixtime.Seconds(e.At), e.Action, e.Fingerprint, e.EntityType, e.EntityID,
				e.ReasonCode, rowcodec.UnixArg(e.SnoozedUntil), e.By); err != nil {
				return fmt.Errorf("triage log of %s: %w", d.Fingerprint, err)
			}
		}
		return nil
	})
	if err != nil {
		return "", fmt.Errorf("%s: %w", label, err)
	}
	return batch, nil
}

// TriageLog reads the triage log after seq after, oldest first.
func (s *Store) TriageLog(ctx context.Context, after int64, limit int) ([]store.TriageEntry, error) {
	return s.triageLog(ctx, "SELECT "+rowcodec.TriageColumns+" FROM attention_triage WHERE seq > ? ORDER BY seq LIMIT ?", after, limit)
}

// TriageLogBefore reads the triage log before seq before (0: from the
// newest), newest first.
func (s *Store) TriageLogBefore(ctx context.Context, before int64, limit int) ([]store.TriageEntry, error) {
	if before <= 0 {
		before = math.MaxInt64
	}
	return s.triageLog(ctx, "SELECT "+rowcodec.TriageColumns+" FROM attention_triage WHERE seq < ? ORDER BY seq DESC LIMIT ?", before, limit)
}

func (s *Store) triageLog(ctx context.Context, query string, seq int64, limit int) ([]store.TriageEntry, error) {
	st, err := s.prepared(ctx, query)
	if err != nil {
		return nil, fmt.Errorf("read triage log: %w", err)
	}
	rows, err := st.QueryContext(ctx, seq, limit)
	if err != nil {
		return nil, fmt.Errorf("read triage log: %w", err)
	}
	defer rows.Close()
	out := []store.TriageEntry{}
	for rows.Next() {
		e, err := rowcodec.ScanTriage(rows)
		if err != nil {
			return nil, fmt.Errorf("read triage log: %w", err)
		}
		out = append(out, e)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read triage log: %w", err)
	}
	return out, nil
}

// VacuumTriage drops triage rows written before before and reports how many.
// No index on at: a daily full scan costs less than an index every act writes.
func (s *Store) VacuumTriage(ctx context.Context, before time.Time) (int, error) {
	var n int64
	err := s.writeTx(ctx, func() error {
		res, err := s.db.ExecContext(ctx, `DELETE FROM attention_triage WHERE at < ?`, unixtime.Seconds(before))
		if err != nil {
			return err
		}
		n, err = res.RowsAffected()
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("vacuum triage log: %w", err)
	}
	return int(n), nil
}

// Dismissals reads every dismissal, keyed by fingerprint. The table holds
// one row per dismissed condition and vacuum keeps it short, so the
// attention queue reads it whole rather than joining per entity.
func (s *Store) Dismissals(ctx context.Context) (map[string]store.Dismissal, error) {
	st, err := s.prepared(ctx, `SELECT id, fingerprint, entity_type, entity_id, reason_code, status_at_dismissal,
		snoozed_until, dismissed_at, dismissed_by, clear_on_status_change, created_at, occurrence_at
		FROM attention_dismissals`)
	if err != nil {
		return nil, fmt.Errorf("read dismissals: %w", err)
	}
	rows, err := st.QueryContext(ctx)
	if err != nil {
		return nil, fmt.Errorf("read dismissals: %w", err)
	}
	defer rows.Close()
	out := map[string]store.Dismissal{}
	for rows.Next() {
		var d store.Dismissal
		if err := rows.Scan(&d.ID, &d.Fingerprint, &d.EntityType, &d.EntityID, &d.ReasonCode, &d.StatusAtDismissal,
			rowcodec.ScanUnix(&d.SnoozedUntil), rowcodec.ScanUnix(&d.DismissedAt), &d.DismissedBy, &d.ClearOnStatusChange, rowcodec.ScanUnix(&d.CreatedAt), rowcodec.ScanUnix(&d.Occurrence)); err != nil {
			return nil, fmt.Errorf("read dismissals: %w", err)
		}
		out[d.Fingerprint] = d
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read dismissals: %w", err)
	}
	return out, nil
}

// VacuumDismissals drops the dismissals that can never hide an item again
// (expired snoozes, clear_on_status_change rows whose status moved, rows of
// gone entities) and reports how many. A row whose finding's occurrence
// remains is kept: its acknowledgement may carry over (attention.Carries).
// Housekeeping only: the read path already ignores these rows.
func (s *Store) VacuumDismissals(ctx context.Context, now time.Time) (int, error) {
	var n int64
	err := s.writeTx(ctx, func() error {
		res, err := s.db.ExecContext(ctx, `DELETE FROM attention_dismissals
			WHERE (snoozed_until IS NOT NULL AND snoozed_until <= ?)
			   OR NOT EXISTS (SELECT 1 FROM entities e
			                   WHERE e.type = attention_dismissals.entity_type AND e.id = attention_dismissals.entity_id)
			   OR (clear_on_status_change = 1 AND EXISTS (SELECT 1 FROM entities e
			                   WHERE e.type = attention_dismissals.entity_type AND e.id = attention_dismissals.entity_id
			                     AND e.lifecycle IS NOT attention_dismissals.status_at_dismissal
			                     AND NOT (attention_dismissals.occurrence_at IS NOT NULL AND EXISTS (
			                         SELECT 1 FROM json_each(e.reasons) r
			                          WHERE json_extract(r.value, '$.code') = attention_dismissals.reason_code
			                            AND abs(json_extract(r.value, '$.first_seen_at') - attention_dismissals.occurrence_at) < 0.001))))`, unixtime.Seconds(now))
		if err != nil {
			return err
		}
		n, err = res.RowsAffected()
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("vacuum dismissals: %w", err)
	}
	return int(n), nil
}

// AttentionCandidates reads every entity that may have attention items for a
// failure window starting at since (attention.Since, AgedOut, Lingers). Only
// rowcodec.AttentionColumns are filled: these entities are for the queue only.
func (s *Store) AttentionCandidates(ctx context.Context, since time.Time) ([]store.Entity, error) {
	// The failure window is attention.AgedOut's rule, with its cut-off
	// (attention.Since) as the parameter.
	st, err := s.prepared(ctx, "SELECT "+rowcodec.AttentionColumns+" FROM entities WHERE "+rowcodec.InWindow("terminal = 0", "?"))
	if err != nil {
		return nil, fmt.Errorf("read attention candidates: %w", err)
	}
	rows, err := st.QueryContext(ctx, unixtime.Seconds(since))
	if err != nil {
		return nil, fmt.Errorf("read attention candidates: %w", err)
	}
	defer rows.Close()
	var out []store.Entity
	for rows.Next() {
		// The one decoding of AttentionColumns, PostgreSQL's too.
		e, err := rowcodec.ScanAttention(rows)
		if err != nil {
			return nil, fmt.Errorf("read attention candidates: %w", err)
		}
		out = append(out, e)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read attention candidates: %w", err)
	}
	return out, nil
}
