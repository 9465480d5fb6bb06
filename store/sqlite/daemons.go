package sqlite

import (
	"context"
	"fmt"
	"time"

	"watchdog/internal/unixtime"
)

// MarkDaemon records that a daemon of hostID was alive at at (an upsert;
// the daemon marks its presence every few seconds).
func (s *Store) MarkDaemon(ctx context.Context, hostID string, at time.Time) error {
	err := s.writeTx(ctx, func() error {
		_, err := s.db.ExecContext(ctx, `INSERT INTO daemons (host_id, seen_at) VALUES (?, ?)
			ON CONFLICT (host_id) DO UPDATE SET seen_at = max(seen_at, excluded.seen_at)`, hostID, unixtime.Seconds(at))
		return err
	})
	if err != nil {
		return fmt.Errorf("mark daemon %s: %w", hostID, err)
	}
	return nil
}

// DaemonHosts returns the hosts whose daemon was seen at or after since.
func (s *Store) DaemonHosts(ctx context.Context, since time.Time) (map[string]bool, error) {
	rows, err := s.db.QueryContext(ctx, "SELECT host_id FROM daemons WHERE seen_at >= ?", unixtime.Seconds(since))
	if err != nil {
		return nil, fmt.Errorf("list daemons: %w", err)
	}
	defer rows.Close()
	out := map[string]bool{}
	for rows.Next() {
		var h string
		if err := rows.Scan(&h); err != nil {
			return nil, fmt.Errorf("list daemons: %w", err)
		}
		out[h] = true
	}
	return out, rows.Err()
}

// DaemonsSeen returns every host that ever had a daemon mark its presence
// in this store, with when it last did: what the leader reads to judge
// silent hosts (disconnected, then lost).
func (s *Store) DaemonsSeen(ctx context.Context) (map[string]time.Time, error) {
	rows, err := s.db.QueryContext(ctx, "SELECT host_id, seen_at FROM daemons")
	if err != nil {
		return nil, fmt.Errorf("list daemons: %w", err)
	}
	defer rows.Close()
	out := map[string]time.Time{}
	for rows.Next() {
		var h string
		var at float64
		if err := rows.Scan(&h, &at); err != nil {
			return nil, fmt.Errorf("list daemons: %w", err)
		}
		out[h] = unixtime.FromSeconds(at)
	}
	return out, rows.Err()
}
