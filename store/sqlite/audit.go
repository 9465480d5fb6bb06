package sqlite

import (
	"context"
	"fmt"
	"slices"
	"watchdog/state"
	"watchdog/store"
	"watchdog/store/internal/rowcodec"
)

// LatestTransitions reads an entity's last n audit rows, oldest first, and
// how many it has in all: the entity read's bounded view of its history
// (idx_transitions_entity serves both, newest first, without a sort).
func (s *Store) LatestTransitions(ctx context.Context, typ, id string, n int) ([]store.AuditRow, int, error) {
	var total int
	if err := s.db.QueryRowContext(ctx, `SELECT COUNT(*) FROM transitions WHERE entity_type = ? AND entity_id = ?`, typ, id).Scan(&total); err != nil {
		return nil, 0, fmt.Errorf("count transitions of %s/%s: %w", typ, id, err)
	}
	rows, err := s.queryAudit(ctx, typ, id, `SELECT `+rowcodec.AuditColumns+`
		FROM transitions WHERE entity_type = ? AND entity_id = ? ORDER BY seq DESC LIMIT ?`, typ, id, n)
	if err != nil {
		return nil, 0, err
	}
	slices.Reverse(rows)
	return rows, total, nil
}

// TransitionsAfter reads at most limit audit rows of an entity with seq >
// after, oldest first; global seqs mean a page never repeats or skips a row.
func (s *Store) TransitionsAfter(ctx context.Context, typ, id string, after int64, limit int) ([]store.AuditRow, error) {
	return s.queryAudit(ctx, typ, id, `SELECT `+rowcodec.AuditColumns+`
		FROM transitions WHERE entity_type = ? AND entity_id = ? AND seq > ? ORDER BY seq LIMIT ?`, typ, id, after, limit)
}

// queryAudit runs a query selecting rowcodec.AuditColumns; typ and id name the
// entity in errors.
func (s *Store) queryAudit(ctx context.Context, typ, id, query string, args ...any) ([]store.AuditRow, error) {
	rows, err := s.db.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, fmt.Errorf("read transitions of %s/%s: %w", typ, id, err)
	}
	defer rows.Close()
	out := []store.AuditRow{}
	for rows.Next() {
		r, err := rowcodec.ScanAudit(rows)
		if err != nil {
			return nil, fmt.Errorf("read transitions of %s/%s: %w", typ, id, err)
		}
		if r.Evidence == nil {
			r.Evidence = []state.EvidenceRef{}
		}
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read transitions of %s/%s: %w", typ, id, err)
	}
	return out, nil
}
