package sqlite

import (
	"context"
	"database/sql"
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
	return byHost(ctx, s, "list hostnames", "SELECT host_id, hostname FROM daemons WHERE hostname <> ''",
		func(rows *sql.Rows, h *string) (name string, err error) { return name, rows.Scan(h, &name) })
}

// DaemonHosts returns the hosts whose daemon was seen at or after since.
func (s *Store) DaemonHosts(ctx context.Context, since time.Time) (map[string]bool, error) {
	return byHost(ctx, s, "list daemons", "SELECT host_id FROM daemons WHERE seen_at >= ?",
		func(rows *sql.Rows, h *string) (bool, error) { return true, rows.Scan(h) }, unixtime.Seconds(since))
}

// DaemonsSeen returns every host that ever had a daemon mark its presence
// in this store, with when it last did: what the leader reads to judge
// silent hosts (disconnected, then lost).
func (s *Store) DaemonsSeen(ctx context.Context) (map[string]time.Time, error) {
	return byHost(ctx, s, "list daemons", "SELECT host_id, seen_at FROM daemons", scanTime)
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
	return byHost(ctx, s, "read the daemons' settings", "SELECT host_id, settings, settings_source, settings_at FROM daemons WHERE settings <> ''",
		func(rows *sql.Rows, h *string) (ds store.DaemonSettings, err error) {
			var at float64
			err = rows.Scan(h, &ds.YAML, &ds.Source, &at)
			ds.At = unixtime.FromSeconds(at)
			return ds, err
		})
}

// LastObserved returns, for each host, when a judgement last wrote one of
// its entities (an observation's time): with the presence records, when
// its daemon last judged, though it died without recording its stop.
func (s *Store) LastObserved(ctx context.Context) (map[string]time.Time, error) {
	return byHost(ctx, s, "read the last observations",
		"SELECT host_id, MAX(observed_at) FROM entities WHERE observed_at IS NOT NULL GROUP BY host_id", scanTime)
}

// byHost runs query, whose rows begin with a host id, and maps each host
// to what scan makes of its row; what names the read in its errors.
func byHost[T any](ctx context.Context, s *Store, what, query string, scan func(*sql.Rows, *string) (T, error), args ...any) (map[string]T, error) {
	rows, err := s.db.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
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
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	return out, nil
}

// scanTime scans a host id and a time in Unix seconds.
func scanTime(rows *sql.Rows, h *string) (time.Time, error) {
	var at float64
	err := rows.Scan(h, &at)
	return unixtime.FromSeconds(at), err
}
