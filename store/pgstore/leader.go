package pgstore

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
)

// leaderCheckEvery is how often a held leadership checks its connection.
// The lock dies with the connection, so this bounds how long a daemon may
// believe it leads after the server dropped it.
const leaderCheckEvery = 2 * time.Second

// Leadership is a session-level advisory lock held on a connection of its
// own: the daemon holding it is the fleet's leader until Release, or
// until the connection is lost (Done closes), when the server has already
// let the lock go and another daemon may take it.
type Leadership struct {
	conn    *pgx.Conn
	key     int64
	done    chan struct{}
	stop    context.CancelFunc
	watcher sync.WaitGroup
	once    sync.Once
}

// TryLeader takes the advisory lock key without waiting, on a new
// connection that holds it. ok is false when another session holds it
// (then nothing is held and l is nil).
func (s *Store) TryLeader(ctx context.Context, key int64) (l *Leadership, ok bool, err error) {
	conn, err := pgx.Connect(ctx, s.dsn)
	if err != nil {
		return nil, false, fmt.Errorf("leader lock %d: connect: %w", key, classify(err))
	}
	if err := conn.QueryRow(ctx, "SELECT pg_try_advisory_lock($1)", key).Scan(&ok); err != nil {
		conn.Close(context.WithoutCancel(ctx))
		return nil, false, fmt.Errorf("leader lock %d: %w", key, classify(err))
	}
	if !ok {
		conn.Close(context.WithoutCancel(ctx))
		return nil, false, nil
	}
	wctx, stop := context.WithCancel(context.Background())
	l = &Leadership{conn: conn, key: key, done: make(chan struct{}), stop: stop}
	l.watcher.Go(func() { l.watch(wctx) })
	return l, true, nil
}

// watch pings the connection until it fails (the lock is gone with it) or
// Release stops it.
func (l *Leadership) watch(ctx context.Context) {
	t := time.NewTicker(leaderCheckEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		pctx, cancel := context.WithTimeout(ctx, leaderCheckEvery)
		err := l.conn.Ping(pctx)
		cancel()
		if err != nil && ctx.Err() == nil {
			l.once.Do(func() { close(l.done) })
			return
		}
	}
}

// Done is closed when the leadership was lost with its connection.
func (l *Leadership) Done() <-chan struct{} { return l.done }

// Release unlocks and closes the connection. Safe to call more than once.
func (l *Leadership) Release() {
	l.stop()
	l.watcher.Wait()
	l.once.Do(func() { close(l.done) })
	if !l.conn.IsClosed() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		// Closing the session drops the lock as well; the unlock says so
		// to a reader of the server's log.
		_, _ = l.conn.Exec(ctx, "SELECT pg_advisory_unlock($1)", l.key)
		l.conn.Close(ctx)
	}
}
