package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"strings"

	"watchdog/store"
	"watchdog/store/internal/rowcodec"
)

// ChangesSince reads the change feed: the entities whose revision is
// greater than c.Revision and the audit rows whose seq is greater than
// c.Seq, at most limit of each (limit < 1 means 1000). Every write to an
// entity row, by any writer (this process, a CLI with --db, an older
// binary), takes the next store revision in migration 0005's triggers, and
// rows are never deleted, so a reader that applies every batch in order
// misses nothing. The two lists are read one after the other, not in one
// snapshot: an audit row may arrive a batch before (or after) the entity
// row it changed, and a reader must not rely on their pairing.
func (s *Store) ChangesSince(ctx context.Context, c store.Cursor, limit int) (store.Batch, error) {
	return s.ChangesFor(ctx, c, store.FeedFilter{Hosts: store.AllHosts()}, limit)
}

// ChangesFor is ChangesSince of the entities and audit rows of f.Hosts
// only (by the indexes on host and revision, host and seq, when it names
// the hosts; a leader's "all but" reads in feed order and skips the
// others' rows), and of no audit rows with f.EntitiesOnly.
func (s *Store) ChangesFor(ctx context.Context, c store.Cursor, f store.FeedFilter, limit int) (store.Batch, error) {
	if limit < 1 {
		limit = 1000
	}
	b := store.Batch{Next: c}
	// A read of every host but some scans the feed in order and skips
	// the others' rows; a cursor left at the last row kept would scan
	// them again at every read, as many as the others wrote since. The
	// head, read first, is where such a read that reached the end may
	// go on from: every row up to it was committed before the rows were
	// read (one writer, numbers in commit order).
	var head store.Cursor
	skips := f.Hosts.All && !f.Hosts.Every()
	if skips {
		var err error
		if head, err = s.FeedHead(ctx); err != nil {
			return store.Batch{}, err
		}
	}
	var (
		rows *sql.Rows
		err  error
	)
	if f.Hosts.Every() {
		var st *sql.Stmt
		st, err = s.prepared(ctx, "SELECT "+rowcodec.EntityColumns+" FROM entities WHERE revision > ? ORDER BY revision LIMIT ?")
		if err != nil {
			return store.Batch{}, fmt.Errorf("read changed entities: %w", err)
		}
		rows, err = st.QueryContext(ctx, c.Revision, limit)
	} else {
		where, args := hostsWhere(f.Hosts, c.Revision, limit)
		rows, err = s.db.QueryContext(ctx, "SELECT "+rowcodec.EntityColumns+" FROM entities WHERE revision > ?"+where+" ORDER BY revision LIMIT ?", args...)
	}
	if err != nil {
		return store.Batch{}, fmt.Errorf("read changed entities: %w", err)
	}
	var scan rowcodec.EntityScanner
	for rows.Next() {
		e, err := scan.Scan(rows)
		if err != nil {
			rows.Close()
			return store.Batch{}, fmt.Errorf("read changed entities: %w", err)
		}
		b.Entities = append(b.Entities, e)
		b.Next.Revision = e.Revision
	}
	err = rows.Err()
	rows.Close()
	if err != nil {
		return store.Batch{}, fmt.Errorf("read changed entities: %w", err)
	}

	if skips && len(b.Entities) < limit {
		b.Next.Revision = max(b.Next.Revision, head.Revision)
	}
	if f.EntitiesOnly {
		b.More = len(b.Entities) == limit
		return b, nil
	}
	var arows *sql.Rows
	if f.Hosts.Every() {
		var st *sql.Stmt
		st, err = s.prepared(ctx, "SELECT "+rowcodec.AuditColumns+" FROM transitions WHERE seq > ? ORDER BY seq LIMIT ?")
		if err != nil {
			return store.Batch{}, fmt.Errorf("read new transitions: %w", err)
		}
		arows, err = st.QueryContext(ctx, c.Seq, limit)
	} else {
		// The audit rows of the same hosts, by the index on host and seq
		// (migration 0011).
		where, args := hostsWhere(f.Hosts, c.Seq, limit)
		arows, err = s.db.QueryContext(ctx, "SELECT "+rowcodec.AuditColumns+" FROM transitions WHERE seq > ?"+where+" ORDER BY seq LIMIT ?", args...)
	}
	if err != nil {
		return store.Batch{}, fmt.Errorf("read new transitions: %w", err)
	}
	defer arows.Close()
	for arows.Next() {
		r, err := rowcodec.ScanAudit(arows)
		if err != nil {
			return store.Batch{}, fmt.Errorf("read new transitions: %w", err)
		}
		b.Transitions = append(b.Transitions, r)
		b.Next.Seq = r.Seq
	}
	if err := arows.Err(); err != nil {
		return store.Batch{}, fmt.Errorf("read new transitions: %w", err)
	}
	if skips && len(b.Transitions) < limit {
		b.Next.Seq = max(b.Next.Seq, head.Seq)
	}
	b.More = len(b.Entities) == limit || len(b.Transitions) == limit
	return b, nil
}

// hostsWhere is the clause that keeps the rows of hosts (not Every), and
// the arguments of a feed read with it: after, the hosts, limit.
func hostsWhere(hosts store.Hosts, after int64, limit int) (string, []any) {
	in := "IN"
	if hosts.All {
		in = "NOT IN"
	}
	args := []any{after}
	marks := make([]string, len(hosts.List))
	for i, h := range hosts.List {
		marks[i] = "?"
		args = append(args, h)
	}
	return " AND host_id " + in + " (" + strings.Join(marks, ",") + ")", append(args, limit)
}

// FeedHead is the cursor of the newest change: the store revision and the
// last audit seq. A reader that starts at FeedHead sees only what is
// written after it (the metrics counters start there, so a restart does
// not count the whole history again).
func (s *Store) FeedHead(ctx context.Context) (store.Cursor, error) {
	var c store.Cursor
	err := s.db.QueryRowContext(ctx, `SELECT (SELECT revision FROM store_revision WHERE id = 1),
		IFNULL((SELECT MAX(seq) FROM transitions), 0)`).Scan(&c.Revision, &c.Seq)
	if err != nil {
		return store.Cursor{}, fmt.Errorf("read the change feed's head: %w", err)
	}
	return c, nil
}

// DataVersion is a number that moves whenever any connection but the one
// asked commits to the database: SQLite's PRAGMA data_version, asked on the
// store's pinned connection, which never writes, so this process's own
// writes (through the pool's other connections) and other processes'
// writes both move it. Equal answers mean nothing was committed in
// between: a reader of the feed polls this one cheap query and reads
// ChangesSince only when it moved. The value itself means nothing.
//
// An in-memory store has no pinned connection; it answers the feed's head
// instead, which moves with every entity or audit write (not with a
// dismissal: an in-memory store is a test's).
func (s *Store) DataVersion(ctx context.Context) (int64, error) {
	if s.pin == nil {
		c, err := s.FeedHead(ctx)
		return c.Revision<<32 ^ c.Seq, err
	}
	var v int64
	s.pinMu.Lock()
	defer s.pinMu.Unlock()
	if err := s.pin.QueryRowContext(ctx, "PRAGMA data_version").Scan(&v); err != nil {
		return 0, fmt.Errorf("read the store's data version: %w", err)
	}
	return v, nil
}
