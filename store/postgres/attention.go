package postgres

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/jackc/pgx/v5"

	"watchdog/internal/unixtime"
	"watchdog/store"
	"watchdog/store/internal/rowcodec"
)

// UpsertDismissal inserts or replaces the dismissal of d.Fingerprint with
// sqlite.Store.UpsertDismissal's rules (the row keeps its id and
// created_at): a batch of one (UpsertDismissals).
func (s *Store) UpsertDismissal(ctx context.Context, d store.Dismissal) error {
	_, err := s.UpsertDismissals(ctx, []store.Dismissal{d})
	return err
}

// UpsertDismissals writes every dismissal of ds and one attention_triage
// row each, under one new batch id, in one transaction: all or none
// (sqlite.Store.UpsertDismissals).
func (s *Store) UpsertDismissals(ctx context.Context, ds []store.Dismissal) (string, error) {
	ds, err := rowcodec.PrepareDismissals(ds)
	if err != nil {
		return "", err
	}
	batch, err := rowcodec.NewTriageBatch()
	if err != nil {
		return "", err
	}
	err = s.writeTx(ctx, &told{}, func(tx pgx.Tx) error { // the dismissals trigger notifies
		for _, d := range ds {
			if _, err := tx.Exec(ctx, `INSERT INTO attention_dismissals (id, fingerprint, entity_type, entity_id,
			reason_code, status_at_dismissal, snoozed_until, dismissed_at, dismissed_by, clear_on_status_change, created_at, occurrence_at)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)
			ON CONFLICT (fingerprint) DO UPDATE SET
				entity_type = excluded.entity_type, entity_id = excluded.entity_id,
				reason_code = excluded.reason_code, status_at_dismissal = excluded.status_at_dismissal,
				snoozed_until = excluded.snoozed_until, dismissed_at = excluded.dismissed_at,
				dismissed_by = excluded.dismissed_by, clear_on_status_change = excluded.clear_on_status_change,
				occurrence_at = excluded.occurrence_at`,
				d.ID, d.Fingerprint, d.EntityType, d.EntityID, d.ReasonCode, d.StatusAtDismissal,
				rowcodec.UnixArg(d.SnoozedUntil), unixtime.Seconds(d.DismissedAt), d.DismissedBy,
				d.ClearOnStatusChange, unixtime.Seconds(d.CreatedAt), rowcodec.UnixArg(d.Occurrence)); err != nil {
				return fmt.Errorf("dismissal %s: %w", d.Fingerprint, err)
			}
			e := store.TriageOf(d, batch)
			if _, err := tx.Exec(ctx, `INSERT INTO attention_triage (batch, at, action, fingerprint, entity_type, entity_id,
			reason_code, snoozed_until, actor) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)`,
				e.Batch, unixtime.Seconds(e.At), e.Action, e.Fingerprint, e.EntityType, e.EntityID,
				e.ReasonCode, rowcodec.UnixArg(e.SnoozedUntil), e.By); err != nil {
				return fmt.Errorf("triage log of %s: %w", d.Fingerprint, err)
			}
		}
		return nil
	})
	if err != nil {
		if len(ds) == 1 {
			return "", fmt.Errorf("upsert dismissal %s: %w", ds[0].Fingerprint, err)
		}
		return "", fmt.Errorf("upsert %d dismissals: %w", len(ds), err)
	}
	return batch, nil
}

// TriageLog reads the triage log after seq after, oldest first.
func (s *Store) TriageLog(ctx context.Context, after int64, limit int) ([]store.TriageEntry, error) {
	return s.triageLog(ctx, "SELECT "+rowcodec.TriageColumns+" FROM attention_triage WHERE seq > $1 ORDER BY seq LIMIT $2", after, limit)
}

// TriageLogBefore reads the triage log before seq before (0: from the
// newest), newest first.
func (s *Store) TriageLogBefore(ctx context.Context, before int64, limit int) ([]store.TriageEntry, error) {
	if before <= 0 {
		before = math.MaxInt64
	}
	return s.triageLog(ctx, "SELECT "+rowcodec.TriageColumns+" FROM attention_triage WHERE seq < $1 ORDER BY seq DESC LIMIT $2", before, limit)
}

func (s *Store) triageLog(ctx context.Context, query string, seq int64, limit int) ([]store.TriageEntry, error) {
	rows, err := s.pool.Query(ctx, query, seq, limit)
	if err != nil {
		return nil, fmt.Errorf("read triage log: %w", classify(err))
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
		return nil, fmt.Errorf("read triage log: %w", classify(err))
	}
	return out, nil
}

// VacuumTriage drops the triage log's rows written before before (their
// at) and reports how many (sqlite.Store.VacuumTriage's rule).
func (s *Store) VacuumTriage(ctx context.Context, before time.Time) (int, error) {
	var n int64
	err := s.writeTx(ctx, &told{}, func(tx pgx.Tx) error { // no view holds the triage log
		tag, err := tx.Exec(ctx, `DELETE FROM attention_triage WHERE at < $1`, unixtime.Seconds(before))
		n = tag.RowsAffected()
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("vacuum triage log: %w", err)
	}
	return int(n), nil
}

// Dismissals reads every dismissal, keyed by fingerprint.
func (s *Store) Dismissals(ctx context.Context) (map[string]store.Dismissal, error) {
	rows, err := s.pool.Query(ctx, "SELECT "+rowcodec.DismissalColumns+" FROM attention_dismissals")
	if err != nil {
		return nil, fmt.Errorf("read dismissals: %w", classify(err))
	}
	defer rows.Close()
	out := map[string]store.Dismissal{}
	for rows.Next() {
		d, err := rowcodec.ScanDismissal(rows)
		if err != nil {
			return nil, fmt.Errorf("read dismissals: %w", err)
		}
		out[d.Fingerprint] = d
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read dismissals: %w", classify(err))
	}
	return out, nil
}

// VacuumDismissals drops the dismissals that can never hide an item again
// (sqlite.Store.VacuumDismissals' rule, the rows that may carry over to an
// escalation's item kept) and reports how many.
func (s *Store) VacuumDismissals(ctx context.Context, now time.Time) (int, error) {
	var n int64
	err := s.writeTx(ctx, &told{}, func(tx pgx.Tx) error { // the dismissals trigger notifies
		tag, err := tx.Exec(ctx, `DELETE FROM attention_dismissals d
			WHERE (d.snoozed_until IS NOT NULL AND d.snoozed_until <= $1)
			   OR NOT EXISTS (SELECT 1 FROM entities e WHERE e.type = d.entity_type AND e.id = d.entity_id)
			   OR (d.clear_on_status_change AND EXISTS (SELECT 1 FROM entities e
			                   WHERE e.type = d.entity_type AND e.id = d.entity_id
			                     AND e.lifecycle IS DISTINCT FROM d.status_at_dismissal
			                     AND NOT (d.occurrence_at IS NOT NULL AND EXISTS (
			                         SELECT 1 FROM jsonb_array_elements(e.reasons::jsonb) r
			                          WHERE r->>'code' = d.reason_code
			                            AND abs((r->>'first_seen_at')::double precision - d.occurrence_at) < 0.001))))`, unixtime.Seconds(now))
		n = tag.RowsAffected()
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("vacuum dismissals: %w", err)
	}
	return int(n), nil
}

// MarkDaemon records that a daemon of hostID swept at at (an upsert that
// never moves seen_at back). It is not a feed write: presence every few
// seconds from every host is one statement of its own. It is a write all
// the same: its outcome is recorded for WriteHealth.
func (s *Store) MarkDaemon(ctx context.Context, hostID string, at time.Time) (err error) {
	s.writes.Start()
	defer func() { s.writes.Done(err) }()
	_, err = s.pool.Exec(ctx, `INSERT INTO daemons (host_id, seen_at) VALUES ($1, $2)
		ON CONFLICT (host_id) DO UPDATE SET seen_at = GREATEST(daemons.seen_at, excluded.seen_at)`, hostID, unixtime.Seconds(at))
	if err != nil {
		return fmt.Errorf("mark daemon %s: %w", hostID, classify(err))
	}
	return nil
}

// MarkDaemonStart is MarkDaemon at a daemon's start, recording its
// machine's hostname too (the page names a host by it).
func (s *Store) MarkDaemonStart(ctx context.Context, hostID, hostname string, at time.Time) (err error) {
	s.writes.Start()
	defer func() { s.writes.Done(err) }()
	_, err = s.pool.Exec(ctx, `INSERT INTO daemons (host_id, seen_at, hostname) VALUES ($1, $2, $3)
		ON CONFLICT (host_id) DO UPDATE SET seen_at = GREATEST(daemons.seen_at, excluded.seen_at), hostname = excluded.hostname`, hostID, unixtime.Seconds(at), hostname)
	if err != nil {
		return fmt.Errorf("mark daemon %s started: %w", hostID, classify(err))
	}
	return nil
}

// HostNames returns the hostname each host's daemon recorded at its last
// start; a host without one is absent.
func (s *Store) HostNames(ctx context.Context) (map[string]string, error) {
	return byHost(ctx, s, "list hostnames", "SELECT host_id, hostname FROM daemons WHERE hostname <> ''",
		func(rows pgx.Rows, h *string) (name string, err error) { return name, rows.Scan(h, &name) })
}

// DaemonHosts returns the hosts whose daemon was seen at or after since.
func (s *Store) DaemonHosts(ctx context.Context, since time.Time) (map[string]bool, error) {
	return byHost(ctx, s, "list daemons", "SELECT host_id FROM daemons WHERE seen_at >= $1",
		func(rows pgx.Rows, h *string) (bool, error) { return true, rows.Scan(h) }, unixtime.Seconds(since))
}

// DaemonsSeen returns when each host's daemon last recorded its presence.
func (s *Store) DaemonsSeen(ctx context.Context) (map[string]time.Time, error) {
	return byHost(ctx, s, "list daemons", "SELECT host_id, seen_at FROM daemons",
		func(rows pgx.Rows, h *string) (time.Time, error) {
			var at float64
			err := rows.Scan(h, &at)
			return unixtime.FromSeconds(at), err
		})
}

// RecordSettings records the settings hostID's daemon judges with.
func (s *Store) RecordSettings(ctx context.Context, hostID string, ds store.DaemonSettings) (err error) {
	s.writes.Start()
	defer func() { s.writes.Done(err) }()
	_, err = s.pool.Exec(ctx, `INSERT INTO daemons (host_id, seen_at, settings, settings_source, settings_at) VALUES ($1, $2, $3, $4, $5)
		ON CONFLICT (host_id) DO UPDATE SET settings = excluded.settings, settings_source = excluded.settings_source, settings_at = excluded.settings_at`,
		hostID, unixtime.Seconds(ds.At), ds.YAML, ds.Source, unixtime.Seconds(ds.At))
	if err != nil {
		return fmt.Errorf("record daemon %s's settings: %w", hostID, classify(err))
	}
	return nil
}

// Settings returns the settings each host's daemon recorded last.
func (s *Store) Settings(ctx context.Context) (map[string]store.DaemonSettings, error) {
	return byHost(ctx, s, "read the daemons' settings", "SELECT host_id, settings, settings_source, settings_at FROM daemons WHERE settings <> ''",
		func(rows pgx.Rows, h *string) (ds store.DaemonSettings, err error) {
			var at float64
			err = rows.Scan(h, &ds.YAML, &ds.Source, &at)
			ds.At = unixtime.FromSeconds(at)
			return ds, err
		})
}

// byHost runs query, whose rows begin with a host id, and maps each host
// to what scan makes of its row; what names the read in its errors.
func byHost[T any](ctx context.Context, s *Store, what, query string, scan func(pgx.Rows, *string) (T, error), args ...any) (map[string]T, error) {
	rows, err := s.pool.Query(ctx, query, args...)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, classify(err))
	}
	defer rows.Close()
	out := map[string]T{}
	for rows.Next() {
		var h string
		v, err := scan(rows, &h)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", what, err)
		}
		out[h] = v
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", what, classify(err))
	}
	return out, nil
}
