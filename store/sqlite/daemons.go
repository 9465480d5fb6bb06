package sqlite

import (
	"context"
	"fmt"
	"time"

	"watchdog/internal/unixtime"
	"watchdog/store"
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

// MarkDaemonStart is MarkDaemon at a daemon's start, recording its
// machine's hostname too (the page names a host by it).
func (s *Store) MarkDaemonStart(ctx context.Context, hostID, hostname string, at time.Time) error {
	err := s.writeTx(ctx, func() error {
		_, err := s.db.ExecContext(ctx, `INSERT INTO daemons (host_id, seen_at, hostname) VALUES (?, ?, ?)
			ON CONFLICT (host_id) DO UPDATE SET seen_at = max(seen_at, excluded.seen_at), hostname = excluded.hostname`, hostID, unixtime.Seconds(at), hostname)
		return err
	})
	if err != nil {
		return fmt.Errorf("mark daemon %s started: %w", hostID, err)
	}
	return nil
}

// HostNames returns the hostname each host's daemon recorded at its last
// start; a host without one is absent.
func (s *Store) HostNames(ctx context.Context) (map[string]string, error) {
	rows, err := s.db.QueryContext(ctx, "SELECT host_id, hostname FROM daemons WHERE hostname <> ''")
	if err != nil {
		return nil, fmt.Errorf("list hostnames: %w", err)
	}
	defer rows.Close()
	out := map[string]string{}
	for rows.Next() {
		var h, name string
		if err := rows.Scan(&h, &name); err != nil {
			return nil, fmt.Errorf("list hostnames: %w", err)
		}
		out[h] = name
	}
	return out, rows.Err()
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

// RecordSettings records the settings hostID's daemon judges with.
func (s *Store) RecordSettings(ctx context.Context, hostID string, ds store.DaemonSettings) error {
	err := s.writeTx(ctx, func() error {
		_, err := s.db.ExecContext(ctx, `INSERT INTO daemons (host_id, seen_at, settings, settings_source, settings_at) VALUES (?, ?, ?, ?, ?)
			ON CONFLICT (host_id) DO UPDATE SET settings = excluded.settings, settings_source = excluded.settings_source, settings_at = excluded.settings_at`,
			hostID, unixtime.Seconds(ds.At), ds.YAML, ds.Source, unixtime.Seconds(ds.At))
		return err
	})
	if err != nil {
		return fmt.Errorf("record daemon %s's settings: %w", hostID, err)
	}
	return nil
}

// Settings returns the settings each host's daemon recorded last.
func (s *Store) Settings(ctx context.Context) (map[string]store.DaemonSettings, error) {
	rows, err := s.db.QueryContext(ctx, "SELECT host_id, settings, settings_source, settings_at FROM daemons WHERE settings <> ''")
	if err != nil {
		return nil, fmt.Errorf("read the daemons' settings: %w", err)
	}
	defer rows.Close()
	out := map[string]store.DaemonSettings{}
	for rows.Next() {
		var h string
		var ds store.DaemonSettings
		var at float64
		if err := rows.Scan(&h, &ds.YAML, &ds.Source, &at); err != nil {
			return nil, fmt.Errorf("read the daemons' settings: %w", err)
		}
		ds.At = unixtime.FromSeconds(at)
		out[h] = ds
	}
	return out, rows.Err()
}

// LastObserved returns, for each host, when a judgement last wrote one of
// its entities (an observation's time): with the presence records, when
// its daemon last judged, though it died without recording its stop.
func (s *Store) LastObserved(ctx context.Context) (map[string]time.Time, error) {
	rows, err := s.db.QueryContext(ctx, "SELECT host_id, MAX(observed_at) FROM entities WHERE observed_at IS NOT NULL GROUP BY host_id")
	if err != nil {
		return nil, fmt.Errorf("read the last observations: %w", err)
	}
	defer rows.Close()
	out := map[string]time.Time{}
	for rows.Next() {
		var h string
		var at float64
		if err := rows.Scan(&h, &at); err != nil {
			return nil, fmt.Errorf("read the last observations: %w", err)
		}
		out[h] = unixtime.FromSeconds(at)
	}
	return out, rows.Err()
}
