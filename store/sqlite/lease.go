package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"watchdog/internal/unixtime"
)

// TakeLease takes or renews the lease name for holder until now+ttl, in one
// compare-and-set statement, and reports whether holder holds it. One
// writer at a time means two racers cannot both win.
func (s *Store) TakeLease(ctx context.Context, name, holder string, now time.Time, ttl time.Duration) (bool, error) {
	var held bool
	err := s.writeTx(ctx, func() error {
		res, err := s.db.ExecContext(ctx, `INSERT INTO leases (name, holder, expires_at) VALUES (?, ?, ?)
			ON CONFLICT (name) DO UPDATE SET holder = excluded.holder, expires_at = excluded.expires_at
			WHERE leases.holder = excluded.holder OR leases.expires_at < ?`,
			name, holder, unixtime.Seconds(now.Add(ttl)), unixtime.Seconds(now))
		if err != nil {
			return err
		}
		n, err := res.RowsAffected()
		held = n == 1
		return err
	})
	if err != nil {
		return false, fmt.Errorf("take lease %s for %s: %w", name, holder, err)
	}
	return held, nil
}

// ReleaseLease gives the lease name up when holder holds it (a clean
// shutdown), so that another daemon takes it at its next try instead of
// waiting for it to expire. Releasing a lease held by another is a no-op.
func (s *Store) ReleaseLease(ctx context.Context, name, holder string) error {
	err := s.writeTx(ctx, func() error {
		_, err := s.db.ExecContext(ctx, `DELETE FROM leases WHERE name = ? AND holder = ?`, name, holder)
		return err
	})
	if err != nil {
		return fmt.Errorf("release lease %s of %s: %w", name, holder, err)
	}
	return nil
}

// LeaseHolder reads who holds the lease name and until when; "" when
// nobody does (no row, or it expired before now).
func (s *Store) LeaseHolder(ctx context.Context, name string, now time.Time) (string, time.Time, error) {
	var holder string
	var exp float64
	err := s.db.QueryRowContext(ctx, `SELECT holder, expires_at FROM leases WHERE name = ?`, name).Scan(&holder, &exp)
	if err != nil {
		if errors.Is(err, sql.ErrNoRows) {
			return "", time.Time{}, nil
		}
		return "", time.Time{}, fmt.Errorf("read lease %s: %w", name, err)
	}
	until := unixtime.FromSeconds(exp)
	if until.Before(now) {
		return "", time.Time{}, nil
	}
	return holder, until, nil
}
