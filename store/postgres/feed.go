package postgres

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"watchdog/store"
	"watchdog/store/internal/rowcodec"
)

// listen opens the listener's own connection and subscribes it. It is not
// a pool connection: LISTEN belongs to a session, and the pool would hand
// the session to others.
func (s *Store) listen(ctx context.Context) (*pgx.Conn, error) {
	cfg, err := s.connConfig()
	if err != nil {
		return nil, fmt.Errorf("connect the change listener: %w", err)
	}
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("connect the change listener: %w", classify(err))
	}
	if _, err := conn.Exec(ctx, "LISTEN "+notifyChannel); err != nil {
		conn.Close(ctx)
		return nil, fmt.Errorf("listen for changes: %w", classify(err))
	}
	s.listening.Store(true)
	return conn, nil
}

// runListener bumps the version for every notification until ctx ends.
// A lost connection is reopened with backoff; in between, DataVersion
// moves on every call (listening is false), and once subscribed again the
// version moves once more, so a reader re-reads whatever was committed
// while nobody was listening.
func (s *Store) runListener(ctx context.Context, conn *pgx.Conn) {
	backoff := 100 * time.Millisecond
	for {
		for conn != nil {
			if _, err := conn.WaitForNotification(ctx); err != nil {
				s.listening.Store(false)
				s.bump()
				conn.Close(context.Background())
				conn = nil
				break
			}
			s.bump()
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(backoff):
		}
		c, err := s.listen(ctx)
		if err != nil {
			backoff = min(2*backoff, 5*time.Second)
			continue
		}
		backoff = 100 * time.Millisecond
		conn = c
		s.bump()
	}
}

// bump moves DataVersion and wakes the reader of Changes.
func (s *Store) bump() {
	s.version.Add(1)
	select {
	case s.changed <- struct{}{}:
	default:
	}
}

// Changes returns a channel that receives whenever DataVersion moves: a
// change notification heard, this store's own commit, or the listener's
// loss or return. A burst is told once; the reader checks DataVersion and
// reads the feed, so the live view follows the fleet without polling.
func (s *Store) Changes() <-chan struct{} { return s.changed }

// DataVersion is a number that moves whenever anything is committed to
// the database, by this store or any other writer: the count of the
// change notifications migration 0001's triggers send (pg_notify at
// commit), heard on the store's own listening connection, plus this
// store's own commits (counted at once, so a read right after a write
// sees it). The caller reads it before the rows, so a commit after that
// read moves it again. While the listener has no connection it moves on
// every call. The value itself means nothing.
//
// It also folds in the feed's head, read now (one query): a notification
// arrives after the commit it tells of, so a read on this daemon right
// after a write acknowledged by another daemon of the fleet would find
// the version unmoved and answer from before the write (a team registered
// through one daemon read as 404 from another). With the head, every
// write acknowledged before the read is seen by it: read your writes
// across the fleet.
func (s *Store) DataVersion(ctx context.Context) (int64, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	if !s.listening.Load() {
		return s.version.Add(1), nil
	}
	v := s.version.Load()
	head, err := s.FeedHead(ctx)
	if err != nil {
		return 0, err
	}
	// All three only grow, so their sum moves whenever any of them does.
	return v + head.Revision + head.Seq, nil
}

// ChangesSince reads the change feed as sqlite.Store.ChangesSince does:
// entities whose revision is greater than c.Revision and audit rows whose
// seq is greater than c.Seq, at most limit of each (limit < 1 means 1000).
// The feed lock makes numbers commit in order, so a reader that applies
// every batch misses nothing.
func (s *Store) ChangesSince(ctx context.Context, c store.Cursor, limit int) (store.Batch, error) {
	return s.ChangesFor(ctx, c, store.FeedFilter{Hosts: store.AllHosts()}, limit)
}

// ChangesFor is ChangesSince of the entities of f.Hosts only (by the
// index on host and revision when it names the hosts; a leader's "all but"
// reads by revision and skips the others' rows), and of no audit rows
// with f.EntitiesOnly.
func (s *Store) ChangesFor(ctx context.Context, c store.Cursor, f store.FeedFilter, limit int) (store.Batch, error) {
	if limit < 1 {
		limit = 1000
	}
	b := store.Batch{Next: c}
	hostClause := ""
	args := []any{c.Revision, limit}
	if !f.Hosts.Every() {
		hostClause = " AND host_id = ANY($3)"
		if f.Hosts.All {
			hostClause = " AND host_id <> ALL($3)"
		}
		args = append(args, f.Hosts.List)
	}
	rows, err := s.pool.Query(ctx, "SELECT "+rowcodec.EntityColumns+" FROM entities WHERE revision > $1"+hostClause+" ORDER BY revision LIMIT $2", args...)
	if err != nil {
		return store.Batch{}, fmt.Errorf("read changed entities: %w", classify(err))
	}
	var sc rowcodec.EntityScanner
	for rows.Next() {
		e, err := sc.Scan(rows)
		if err != nil {
			rows.Close()
			return store.Batch{}, fmt.Errorf("read changed entities: %w", err)
		}
		b.Entities = append(b.Entities, e)
		b.Next.Revision = e.Revision
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return store.Batch{}, fmt.Errorf("read changed entities: %w", classify(err))
	}
	if f.EntitiesOnly {
		b.More = len(b.Entities) == limit
		return b, nil
	}
	audit, err := s.queryAudit(ctx, "SELECT "+rowcodec.AuditColumns+" FROM transitions WHERE seq > $1 ORDER BY seq LIMIT $2", c.Seq, limit)
	if err != nil {
		return store.Batch{}, fmt.Errorf("read new transitions: %w", err)
	}
	b.Transitions = audit
	if n := len(audit); n > 0 {
		b.Next.Seq = audit[n-1].Seq
	}
	b.More = len(b.Entities) == limit || len(b.Transitions) == limit
	return b, nil
}

// FeedHead is the cursor of the newest committed change. It reads the
// rows, not the sequences: a sequence's last value may be a number an
// uncommitted (or rolled back) writer holds, and a reader starting past it
// would miss that write.
func (s *Store) FeedHead(ctx context.Context) (store.Cursor, error) {
	var c store.Cursor
	err := s.pool.QueryRow(ctx, `SELECT COALESCE((SELECT MAX(revision) FROM entities), 0),
		COALESCE((SELECT MAX(seq) FROM transitions), 0)`).Scan(&c.Revision, &c.Seq)
	if err != nil {
		return store.Cursor{}, fmt.Errorf("read the change feed's head: %w", classify(err))
	}
	return c, nil
}
