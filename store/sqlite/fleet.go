package sqlite

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"fmt"
	"strconv"
	"strings"
	"time"

	"watchdog/store"
	"watchdog/store/internal/rowcodec"
)

var _ store.FleetReader = (*Store)(nil)

// hostsCond is the SQL condition of a host selection (and its args).
func hostsCond(hs store.Hosts) (string, []any) {
	if hs.Every() {
		return "1", nil
	}
	if hs.None() {
		return "0", nil
	}
	marks := strings.TrimSuffix(strings.Repeat("?,", len(hs.List)), ",")
	args := make([]any, len(hs.List))
	for i, h := range hs.List {
		args[i] = h
	}
	if hs.All {
		return "host_id NOT IN (" + marks + ")", args
	}
	return "host_id IN (" + marks + ")", args
}

// querier is what queryEntities reads through: the pool, or one
// connection inside a read transaction (ListPage).
type querier interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// queryEntities reads the entity rows of q.
func (s *Store) queryEntities(ctx context.Context, what, q string, args ...any) ([]store.Entity, error) {
	return queryEntities(ctx, s.db, what, q, args...)
}

// queryEntities reads the entity rows of q through db.
func queryEntities(ctx context.Context, db querier, what, q string, args ...any) ([]store.Entity, error) {
	rows, err := db.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	defer rows.Close()
	var out []store.Entity
	var scan rowcodec.EntityScanner
	for rows.Next() {
		e, err := scan.Scan(rows)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", what, err)
		}
		out = append(out, e)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	return out, nil
}

// StaleDerived implements store.FleetReader, by the partial index of
// stale rows.
func (s *Store) StaleDerived(ctx context.Context, hs store.Hosts, limit int) ([]store.Entity, error) {
	w, args := hostsCond(hs)
	return s.queryEntities(ctx, "stale derived columns", "SELECT "+rowcodec.EntityColumns+
		" FROM entities INDEXED BY idx_entities_stale WHERE derived_rev IS NOT revision AND "+w+" LIMIT ?", append(args, limit)...)
}

// SetDerived implements store.FleetReader: one write transaction.
func (s *Store) SetDerived(ctx context.Context, ds []store.Derived) error {
	if len(ds) == 0 {
		return nil
	}
	return s.groupWrite(ctx, "derived columns", func(ctx context.Context, tx *sql.Tx) error {
		for _, d := range ds {
			if err := s.setDerived(ctx, tx, d); err != nil {
				return err
			}
		}
		return nil
	})
}

// ListPage implements store.FleetReader: the stale check, counts and page in
// one read transaction, so the counts match the rows the page was cut from.
func (s *Store) ListPage(ctx context.Context, q store.ListQuery) (pg store.Page, err error) {
	conn, err := s.db.Conn(ctx)
	if err != nil {
		return store.Page{}, fmt.Errorf("list a page: %w", err)
	}
	defer conn.Close()
	// BEGIN DEFERRED takes no lock until the first read, and then only a
	// reader's (the pool's own BeginTx is IMMEDIATE: a writer's).
	if _, err := conn.ExecContext(ctx, "BEGIN DEFERRED"); err != nil {
		return store.Page{}, fmt.Errorf("list a page: begin: %w", err)
	}
	defer func() {
		// A read transaction commits nothing; it must end before the
		// connection goes back to the pool, or the pool's next user
		// would find it open. One that cannot end is discarded.
		if _, rerr := conn.ExecContext(context.Background(), "ROLLBACK"); rerr != nil {
			_ = conn.Raw(func(any) error { return driver.ErrBadConn })
			if err == nil {
				err = fmt.Errorf("list a page: end the read: %w", rerr)
			}
		}
	}()
	return listPage(ctx, conn, q)
}

// listPage is ListPage's reads, through db.
func listPage(ctx context.Context, db querier, q store.ListQuery) (store.Page, error) {
	w, args := hostsCond(q.Hosts)
	where := []string{w}
	if q.Type != "" {
		where = append(where, "type = ?")
		args = append(args, q.Type)
	}
	if q.Severities != nil {
		if len(q.Severities) == 0 {
			where = append(where, "0")
		} else {
			where = append(where, "severity IN ("+strings.TrimSuffix(strings.Repeat("?,", len(q.Severities)), ",")+")")
			for _, v := range q.Severities {
				args = append(args, string(v))
			}
		}
	}
	filter := strings.Join(where, " AND ")
	var pg store.Page
	hw, hargs := hostsCond(q.Hosts)
	if !q.NoCounts {
		if err := db.QueryRowContext(ctx, "SELECT EXISTS (SELECT 1 FROM entities INDEXED BY idx_entities_stale WHERE derived_rev IS NOT revision AND "+hw+")",
			hargs...).Scan(&pg.Stale); err != nil {
			return store.Page{}, fmt.Errorf("look for stale rows: %w", err)
		}
		if err := db.QueryRowContext(ctx, "SELECT COUNT(*) FROM entities WHERE "+filter, args...).Scan(&pg.Total); err != nil {
			return store.Page{}, fmt.Errorf("count the list: %w", err)
		}
	}
	page := filter
	pargs := append([]any(nil), args...)
	// Numbered parameters: the keyset names each of its values twice.
	order, after := rowcodec.ListKeyset(&q, func(v any) string {
		pargs = append(pargs, v)
		return "?" + strconv.Itoa(len(pargs))
	})
	if after != "" {
		page += " AND " + after
	}
	if q.After != nil && !q.NoCounts {
		var after int
		if err := db.QueryRowContext(ctx, "SELECT COUNT(*) FROM entities WHERE "+page, pargs...).Scan(&after); err != nil {
			return store.Page{}, fmt.Errorf("count the list: %w", err)
		}
		pg.Before = pg.Total - after
	}
	var err error
	pg.Rows, err = queryEntities(ctx, db, "list a page", "SELECT "+rowcodec.EntityColumns+" FROM entities WHERE "+page+
		" ORDER BY "+order+" LIMIT ?", append(pargs, q.Limit+1)...)
	return pg, err
}

// Scope implements store.FleetReader.
func (s *Store) Scope(ctx context.Context, hs store.Hosts, typ string) ([]string, int, error) {
	w, args := hostsCond(hs)
	var legacy int
	if err := s.db.QueryRowContext(ctx, "SELECT COUNT(*) FROM entities WHERE lifecycle IS NULL AND "+w, args...).Scan(&legacy); err != nil {
		return nil, 0, fmt.Errorf("count legacy entities: %w", err)
	}
	q := "SELECT DISTINCT host_id FROM entities WHERE host_id != '' AND " + w
	if typ != "" {
		q += " AND type = ?"
		args = append(args, typ)
	}
	rows, err := s.db.QueryContext(ctx, q+" ORDER BY host_id", args...)
	if err != nil {
		return nil, 0, fmt.Errorf("read the hosts: %w", err)
	}
	defer rows.Close()
	var hosts []string
	for rows.Next() {
		var h string
		if err := rows.Scan(&h); err != nil {
			return nil, 0, fmt.Errorf("read the hosts: %w", err)
		}
		hosts = append(hosts, h)
	}
	if err := rows.Err(); err != nil {
		return nil, 0, fmt.Errorf("read the hosts: %w", err)
	}
	return hosts, legacy, nil
}

// unixSeconds is how updated_at stores t.
func unixSeconds(t time.Time) any {
	if a := rowcodec.UnixArg(t); a != nil {
		return a
	}
	return 0.0
}

// QueueCandidates implements store.FleetReader, by the partial index of
// the rows with items.
func (s *Store) QueueCandidates(ctx context.Context, hs store.Hosts, cut time.Time) ([]store.Entity, error) {
	w, args := hostsCond(hs)
	return s.queryEntities(ctx, "queue candidates", "SELECT "+rowcodec.EntityColumns+
		" FROM entities WHERE queue_items > 0 AND (queue_expires IS NULL OR queue_expires >= ?) AND "+w,
		append([]any{unixSeconds(cut)}, args...)...)
}

// setDerivedSQL writes a row's derived columns while it is at the
// revision they were derived from and they are stale (a write of them
// over fresh ones would take a new revision: migration 0012's trigger).
const setDerivedSQL = `UPDATE entities SET sev_rank = ?, severity = ?, queue_items = ?, queue_expires = ?,
	derived_rev = revision WHERE type = ? AND id = ? AND revision = ? AND derived_rev IS NOT revision`

// setDerived writes d inside tx.
func (s *Store) setDerived(ctx context.Context, tx *sql.Tx, d store.Derived) error {
	if _, err := s.txExec(ctx, tx, setDerivedSQL, d.Rank, string(d.Severity), d.Items, rowcodec.UnixArg(d.Expires), d.Type, d.ID, d.Revision); err != nil {
		return fmt.Errorf("write derived columns of %s/%s: %w", d.Type, d.ID, err)
	}
	return nil
}

// derive writes the derived columns of typ/id in tx, as tx left the row
// (ADR-0058); after, when not nil, is that row already read.
func (s *Store) derive(ctx context.Context, tx *sql.Tx, typ, id string, after *store.Entity) error {
	fn := store.Derivation()
	if fn == nil {
		return nil
	}
	if after == nil {
		row, err := s.txQueryRow(ctx, tx, selectEntity, typ, id)
		if err != nil {
			return fmt.Errorf("derive %s/%s: %w", typ, id, err)
		}
		e, err := rowcodec.ScanEntity(row)
		if err != nil {
			return fmt.Errorf("derive %s/%s: read: %w", typ, id, err)
		}
		after = &e
	}
	return s.setDerived(ctx, tx, fn(*after))
}
