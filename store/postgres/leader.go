package postgres

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"watchdog/store"
)

// LeaderLock contends for a session advisory lock on a connection of its
// own, kept from one try to the next: a daemon that does not lead asks
// the server with one cheap query per try instead of a new connection,
// and the one that leads proves at each try, by a round trip on the very
// session holding the lock, that it still holds it. Not safe for
// concurrent use; one elector drives it.
type LeaderLock struct {
	s    *Store
	key  int64
	name string
	conn *pgx.Conn
	held bool
}

// LeaderLock returns the contender for the advisory lock key; it connects
// at its first Try, as application_name name (what an operator sees in
// pg_stat_activity beside the lock in pg_locks). A store.SessionLock, so
// that the daemon takes it without naming this driver.
func (s *Store) LeaderLock(key int64, name string) store.SessionLock {
	return &LeaderLock{s: s, key: key, name: name}
}

// leaderKeepalive are the lock connection's server-side settings, unless
// the dsn sets them: the server drops the session of a leader that went
// silent on the network (a partition, a host powered off) within about
// eight seconds, instead of the kernel's two hours, and with it the lock,
// so that another daemon can lead. A unix socket ignores them; a closed
// socket (a killed process) frees the lock at once anyway.
var leaderKeepalive = map[string]string{
	"tcp_keepalives_idle":     "5",
	"tcp_keepalives_interval": "1",
	"tcp_keepalives_count":    "3",
	"tcp_user_timeout":        "8000",
}

// connect opens the lock's own connection: guarded as every connection
// of the store, with the leader's tighter keepalives where the dsn does
// not choose.
func (l *LeaderLock) connect(ctx context.Context) (*pgx.Conn, error) {
	own, err := pgx.ParseConfig(l.s.dsn)
	if err != nil {
		return nil, err
	}
	cfg, err := l.s.connConfig()
	if err != nil {
		return nil, err
	}
	for k, v := range leaderKeepalive {
		if _, set := own.RuntimeParams[k]; !set {
			cfg.RuntimeParams[k] = v
		}
	}
	if l.name != "" {
		cfg.RuntimeParams["application_name"] = l.name
	}
	return pgx.ConnectConfig(ctx, cfg)
}

// Try takes the lock when free, or checks that this session still holds
// it. held is true when it holds the lock as of a round trip that began
// after the call; fresh is true when it was taken by this call. On any
// error the connection is closed (the server drops a lock held on it),
// held is false and the next Try starts on a new connection.
func (l *LeaderLock) Try(ctx context.Context) (held, fresh bool, err error) {
	if l.conn == nil || l.conn.IsClosed() {
		l.held = false
		c, err := l.connect(ctx)
		if err != nil {
			return false, false, fmt.Errorf("leader lock %d: connect: %w", l.key, classify(err))
		}
		l.conn = c
	}
	if l.held {
		// A session-level advisory lock goes only with Release or with
		// the session: a live session is a held lock.
		if err := l.conn.Ping(ctx); err != nil {
			l.drop()
			return false, false, fmt.Errorf("leader lock %d: its connection is gone, and the lock with it: %w", l.key, classify(err))
		}
		return true, false, nil
	}
	var ok bool
	if err := l.conn.QueryRow(ctx, "SELECT pg_try_advisory_lock($1)", l.key).Scan(&ok); err != nil {
		l.drop()
		return false, false, fmt.Errorf("leader lock %d: %w", l.key, classify(err))
	}
	l.held = ok
	return ok, ok, nil
}

// drop closes the connection after a failure; the server ends the
// session and any lock it held.
func (l *LeaderLock) drop() {
	l.held = false
	if l.conn != nil {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		l.conn.Close(ctx)
		l.conn = nil
	}
}

// Release gives the lock up and closes the connection, so that another
// daemon takes the lock at its next try. Safe to call more than once.
func (l *LeaderLock) Release(ctx context.Context) error {
	if l.conn == nil {
		return nil
	}
	var err error
	if l.held && !l.conn.IsClosed() {
		// Closing the session drops the lock as well; the unlock says so
		// to a reader of the server's log.
		if _, e := l.conn.Exec(ctx, "SELECT pg_advisory_unlock($1)", l.key); e != nil {
			err = fmt.Errorf("leader lock %d: unlock: %w", l.key, classify(e))
		}
	}
	l.held = false
	l.conn.Close(ctx)
	l.conn = nil
	return err
}
