package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"strings"

	"watchdog/store"
	"watchdog/store/internal/rowcodec"
)

// ChangesSince reads entities with revision > c.Revision and audit rows with
// seq > c.Seq, at most limit each (< 1: 1000). Triggers number every write and
// rows are never deleted, so applying batches in order misses nothing. The two
// lists are not one snapshot: a reader must not rely on their pairing.
func (s *Store) ChangesSince(ctx context.Context, c store.Cursor, limit int) (store.Batch, error) {
	return s.ChangesFor(ctx, c, store.FeedFilter{Hosts: store.AllHosts()}, limit)
}

// ChangesFor is ChangesSince of f.Hosts only (by the host indexes, or an
// "all but" scan in feed order), and of no audit rows with f.EntitiesOnly.
func (s *Store) ChangesFor(ctx context.Context, c store.Cursor, f store.FeedFilter, limit int) (store.Batch, error) {
	if limit < 1 {
		limit = 1000
	}
	b := store.Batch{Next: c}
	// An "all but" read skips others' rows; it may go on from the head read
	// first (one writer: numbers commit in order), not rescan them every read.
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

// FeedHead is the cursor of the newest change; a reader starting there sees
// only later writes.
func (s *Store) FeedHead(ctx context.Context) (store.Cursor, error) {
	var c store.Cursor
	err := s.db.QueryRowContext(ctx, `SELECT (SELECT revision FROM store_revision WHERE id = 1),
		IFNULL((SELECT MAX(seq) FROM transitions), 0)`).Scan(&c.Revision, &c.Seq)
	if err != nil {
		return store.Cursor{}, fmt.Errorf("read the change feed's head: %w", err)
	}
	return c, nil
}

// DataVersion is a number that moves whenever another connection commits
// (PRAGMA data_version on the pinned, never-writing connection), so a feed
// reader polls it and reads ChangesSince only when it moved. An in-memory
// store answers the feed's head instead.
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
