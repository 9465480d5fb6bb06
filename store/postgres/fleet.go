package postgres

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"watchdog/store"
	"watchdog/store/internal/rowcodec"
)

var _ store.FleetReader = (*Store)(nil)

// sqlArgs numbers a statement's parameters as they are added.
type sqlArgs []any

// add adds v and returns its placeholder.
func (a *sqlArgs) add(v any) string {
	*a = append(*a, v)
	return "$" + strconv.Itoa(len(*a))
}

// hostsWhere is the SQL condition of a host selection.
func hostsWhere(hs store.Hosts, args *sqlArgs) string {
	if hs.Every() {
		return "true"
	}
	if hs.None() {
		return "false"
	}
	if hs.All {
		return "host_id <> ALL(" + args.add(hs.List) + ")"
	}
	return "host_id = ANY(" + args.add(hs.List) + ")"
}

// queryEntities reads the entity rows of q.
func (s *Store) queryEntities(ctx context.Context, what, q string, args ...any) ([]store.Entity, error) {
	rows, err := s.pool.Query(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, classify(err))
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
		return nil, fmt.Errorf("%s: %w", what, classify(err))
	}
	return out, nil
}

// staleCond selects the stale rows (of the hosts hosts selects, a
// hostsWhere).
const staleCond = "derived_rev IS DISTINCT FROM revision AND "

// staleProbe is an SQL condition, true when the rows hosts selects (a
// hostsWhere) have a stale one: the first entry of the partial index of
// stale rows, which holds none as a rule. Asked as EXISTS, or without the
// order and the limit, the planner, which cannot estimate a comparison of
// two columns, reckons a good share of the table stale and scans it whole
// (a millisecond per 5,000 rows) to find none; ordered by the index's key
// and limited to one, it reads the index's first entry.
func staleProbe(hosts string) string {
	return "(SELECT host_id FROM entities WHERE " + staleCond + hosts + " ORDER BY host_id LIMIT 1) IS NOT NULL"
}

// StaleDerived implements store.FleetReader: the rows, once the probe of
// the partial index of stale rows found one (a condition the planner
// evaluates once, before the scan, which it skips when false).
func (s *Store) StaleDerived(ctx context.Context, hs store.Hosts, limit int) ([]store.Entity, error) {
	var args sqlArgs
	w := hostsWhere(hs, &args)
	return s.queryEntities(ctx, "stale derived columns", "SELECT "+rowcodec.EntityColumns+
		" FROM entities WHERE "+staleProbe(w)+" AND "+staleCond+w+" LIMIT "+args.add(limit), args...)
}

// setDerivedSQL writes a row's derived columns while it is at the
// revision they were derived from and they are stale (migration 0007:
// the write keeps the row's revision).
const setDerivedSQL = `UPDATE entities SET sev_rank = $1, severity = $2, queue_items = $3, queue_expires = $4::double precision,
	derived_rev = revision WHERE type = $5 AND id = $6 AND revision = $7 AND derived_rev IS DISTINCT FROM revision`

func setDerivedArgs(d store.Derived) []any {
	return []any{d.Rank, string(d.Severity), d.Items, rowcodec.UnixArg(d.Expires), d.Type, d.ID, d.Revision}
}

// SetDerived implements store.FleetReader: one transaction, the
// statements sent in one batch.
func (s *Store) SetDerived(ctx context.Context, ds []store.Derived) error {
	if len(ds) == 0 {
		return nil
	}
	// No change of an entity: nothing to tell the others (an empty told).
	return s.writeTx(ctx, &told{}, func(tx pgx.Tx) error {
		var b pgx.Batch
		for _, d := range ds {
			b.Queue(setDerivedSQL, setDerivedArgs(d)...)
		}
		if err := tx.SendBatch(ctx, &b).Close(); err != nil {
			return fmt.Errorf("write derived columns: %w", err)
		}
		return nil
	})
}

// derived writes the derived columns of after, a row as a write just
// committed it, in a statement of its own (the write path's statements
// are one round trip each, ADR-0053): when a derivation is registered
// (store.SetDerivation). A failure leaves the row stale, which the
// fleet-wide reader derives itself: the write it follows stands.
func (s *Store) derived(ctx context.Context, after store.Entity) {
	fn := store.Derivation()
	if fn == nil {
		return
	}
	_ = s.writeOne(ctx, &told{}, func(q querier) error {
		_, err := q.Exec(ctx, setDerivedSQL, setDerivedArgs(fn(after))...)
		return err
	})
}

// rederived handles columns a transition wrote fresh but wrong (Applied drifted
// from migration 0008): it marks the row stale whatever its revision, so every
// indexed reader derives it first. It runs even after cancellation; counted for tests.
func (s *Store) rederived(ctx context.Context, d store.Derived) {
	s.columnFixes.Add(1)
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	_ = s.writeOne(ctx, &told{}, func(q querier) error {
		_, err := q.Exec(ctx, `UPDATE entities SET derived_rev = NULL WHERE type = $1 AND id = $2 AND derived_rev = revision`, d.Type, d.ID)
		return err
	})
}

// deriveTx writes the derived columns of typ/id as tx's write left it,
// in tx.
func deriveTx(ctx context.Context, tx pgx.Tx, typ, id string) error {
	fn := store.Derivation()
	if fn == nil {
		return nil
	}
	e, err := rowcodec.ScanEntity(tx.QueryRow(ctx, selectEntity, typ, id))
	if err != nil {
		return fmt.Errorf("derive %s/%s: read: %w", typ, id, err)
	}
	if _, err := tx.Exec(ctx, setDerivedSQL, setDerivedArgs(fn(e))...); err != nil {
		return fmt.Errorf("derive %s/%s: %w", typ, id, err)
	}
	return nil
}

// ListPage implements store.FleetReader in one statement, so one round
// trip and one snapshot: the page by the severity order's index (of every
// host, or by host) or the primary key, with the stale check and the
// counts as subqueries PostgreSQL runs once (InitPlans) beside it. Only a
// page with no rows asks again for the check and the counts alone.
func (s *Store) ListPage(ctx context.Context, q store.ListQuery) (store.Page, error) {
	var args sqlArgs
	hosts := hostsWhere(q.Hosts, &args)
	where := []string{hosts}
	if q.Type != "" {
		where = append(where, "type = "+args.add(q.Type))
	}
	if q.Severities != nil {
		sev := make([]string, len(q.Severities))
		for i, v := range q.Severities {
			sev[i] = string(v)
		}
		where = append(where, "severity = ANY("+args.add(sev)+")")
	}
	filter := strings.Join(where, " AND ")
	// after: the rows past the cursor, of those filter selects.
	order, after := rowcodec.ListKeyset(&q, args.add)
	counts := "COUNT(*), 0"
	page := filter
	if after != "" {
		// One scan counts both: the total and the rows past the cursor.
		counts = "COUNT(*), COUNT(*) FILTER (WHERE " + after + ")"
		page += " AND " + after
	}
	head := "SELECT " + staleProbe(hosts) + ", (SELECT ARRAY[" + counts + "] FROM entities WHERE " + filter + ")"
	if q.NoCounts {
		head = "SELECT false, ARRAY[0, 0]::bigint[]"
	}
	var (
		pg   store.Page
		cnt  []int64
		scan rowcodec.EntityScanner
	)
	rows, err := s.pool.Query(ctx, head+", "+rowcodec.EntityColumns+" FROM entities WHERE "+page+
		" ORDER BY "+order+" LIMIT "+args.add(q.Limit+1), args...)
	if err != nil {
		return store.Page{}, fmt.Errorf("list a page: %w", classify(err))
	}
	defer rows.Close()
	lead := &leadScanner{rows: rows, lead: []any{&pg.Stale, &cnt}}
	for rows.Next() {
		e, err := scan.Scan(lead)
		if err != nil {
			return store.Page{}, fmt.Errorf("list a page: %w", err)
		}
		pg.Rows = append(pg.Rows, e)
	}
	if err := rows.Err(); err != nil {
		return store.Page{}, fmt.Errorf("list a page: %w", classify(err))
	}
	if len(pg.Rows) == 0 && !q.NoCounts {
		// No row carried the check and the counts: past the end, or
		// nothing selected.
		if err := s.pool.QueryRow(ctx, head, args[:len(args)-1]...).Scan(&pg.Stale, &cnt); err != nil {
			return store.Page{}, fmt.Errorf("count the list: %w", classify(err))
		}
	}
	if q.NoCounts {
		return pg, nil
	}
	if len(cnt) != 2 {
		return store.Page{}, fmt.Errorf("count the list: %d counts, want 2", len(cnt))
	}
	pg.Total = int(cnt[0])
	if after != "" {
		pg.Before = pg.Total - int(cnt[1])
	}
	return pg, nil
}

// leadScanner scans the first row's leading columns into lead and hands
// the rest of each row to the caller's destinations (an entity
// scanner's). The leading columns are the same in every row (InitPlans):
// the later rows' are skipped, not decoded again (pgx skips a nil
// destination).
type leadScanner struct {
	rows pgx.Rows
	lead []any
}

// Scan implements rowcodec.RowScanner.
func (l *leadScanner) Scan(dest ...any) error {
	err := l.rows.Scan(append(l.lead[:len(l.lead):len(l.lead)], dest...)...)
	for i := range l.lead {
		l.lead[i] = nil
	}
	return err
}

// Scope implements store.FleetReader.
func (s *Store) Scope(ctx context.Context, hs store.Hosts, typ string) ([]string, int, error) {
	var args sqlArgs
	w := hostsWhere(hs, &args)
	var legacy int
	if err := s.pool.QueryRow(ctx, "SELECT COUNT(*) FROM entities WHERE lifecycle IS NULL AND "+w, args...).Scan(&legacy); err != nil {
		return nil, 0, fmt.Errorf("count legacy entities: %w", classify(err))
	}
	q := "SELECT DISTINCT host_id FROM entities WHERE host_id <> '' AND " + w
	if typ != "" {
		q += " AND type = " + args.add(typ)
	}
	rows, err := s.pool.Query(ctx, q+" ORDER BY host_id", args...)
	if err != nil {
		return nil, 0, fmt.Errorf("read the hosts: %w", classify(err))
	}
	hosts, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, 0, fmt.Errorf("read the hosts: %w", classify(err))
	}
	return hosts, legacy, nil
}

// unixSeconds is how updated_at stores t.
func unixSeconds(t time.Time) float64 {
	if a, ok := rowcodec.UnixArg(t).(float64); ok {
		return a
	}
	return 0
}

// QueueCandidates implements store.FleetReader, by the partial index of
// the rows with items.
func (s *Store) QueueCandidates(ctx context.Context, hs store.Hosts, cut time.Time) ([]store.Entity, error) {
	var args sqlArgs
	c := args.add(unixSeconds(cut))
	w := hostsWhere(hs, &args)
	return s.queryEntities(ctx, "queue candidates", "SELECT "+rowcodec.EntityColumns+
		" FROM entities WHERE queue_items > 0 AND (queue_expires IS NULL OR queue_expires >= "+c+") AND "+w, args...)
}
