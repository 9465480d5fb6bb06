package postgres

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
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
			n, err := conn.WaitForNotification(ctx)
			if err != nil {
				s.listening.Store(false)
				s.bump()
				conn.Close(context.Background())
				conn = nil
				break
			}
			if s.wakes(n.Payload) {
				s.bump()
			}
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

// committed is told of each commit of this store's own: DataVersion moves
// at once (a read after a write sees it) and the other stores listening
// are told of t's hosts (tell).
func (s *Store) committed(t *told) {
	s.bump()
	s.tell(t)
}

// told is what a commit tells the other stores: the hosts whose entities
// and audit rows it wrote ("" the host-less ones), or every host (all: a
// dismissal, which every view reads, or a write whose hosts are not
// known). A nil *told tells every host.
type told struct {
	all   bool
	hosts []string
}

// add records that host's rows were written.
func (t *told) add(host string) {
	if !slices.Contains(t.hosts, host) {
		t.hosts = append(t.hosts, host)
	}
}

// execTold runs query, an UPDATE of entities, with RETURNING host_id, adds
// the hosts of the rows it wrote to t, and says how many it wrote.
func execTold(ctx context.Context, q querier, t *told, query string, args ...any) (int64, error) {
	rows, err := q.Query(ctx, query+" RETURNING host_id", args...)
	if err != nil {
		return 0, err
	}
	defer rows.Close()
	var n int64
	for rows.Next() {
		var host string
		if err := rows.Scan(&host); err != nil {
			return n, err
		}
		t.add(host)
		n++
	}
	return n, rows.Err()
}

// notice is a notification's payload: the store that sends it (its own
// listener skips it) and the hosts its commits wrote, or all. A payload
// that is not one (a dismissal's trigger sends an empty one; an older
// watchdog, its name alone) wakes every listener.
type notice struct {
	From  string   `json:"from"`
	All   bool     `json:"all,omitempty"`
	Hosts []string `json:"hosts,omitempty"`
}

// maxNoticeHosts bounds the hosts one notification names (PostgreSQL's
// payload is under 8,000 bytes): a commit burst across more hosts tells
// every host instead.
const maxNoticeHosts = 64

// WakeFor narrows which other stores' commits move DataVersion (and
// Changes) to the hosts h selects (ADR-0056); host-less notifications still
// move it, and DataVersion still folds in the feed's head.
func (s *Store) WakeFor(h store.Hosts) {
	s.wakeMu.Lock()
	defer s.wakeMu.Unlock()
	if s.wakeOn != nil && s.wakeOn.Equal(h) {
		return
	}
	h.List = slices.Clone(h.List)
	s.wakeOn = &h
}

// wakes says whether a notification's payload moves DataVersion: not its
// own (the commit moved it already), and one of the hosts WakeFor selects.
func (s *Store) wakes(payload string) bool {
	var n notice
	if json.Unmarshal([]byte(payload), &n) != nil || n.From == "" {
		return true
	}
	if n.From == s.self {
		return false
	}
	if n.All {
		return true
	}
	s.wakeMu.RLock()
	defer s.wakeMu.RUnlock()
	if s.wakeOn == nil {
		return true
	}
	return slices.ContainsFunc(n.Hosts, s.wakeOn.Has)
}

// tell has the notifier send one notification on watchdog_changes soon,
// naming t's hosts. Writers do not notify themselves: NOTIFY serialises
// commits cluster-wide; the notifier's flushless statement batches a burst.
func (s *Store) tell(t *told) {
	if !s.keepUntold(t) {
		return // nothing the others read
	}
	select {
	case s.tellWake <- struct{}{}:
	default:
	}
}

// keepUntold adds t to what is untold, and says whether t has anything
// to tell.
func (s *Store) keepUntold(t *told) bool {
	s.untoldMu.Lock()
	defer s.untoldMu.Unlock()
	switch {
	case t == nil || t.all:
		s.untold.all = true
	case len(t.hosts) == 0:
		return false
	default:
		for _, h := range t.hosts {
			s.untold.add(h)
		}
	}
	return true
}

// runNotifier sends the notifications tell asks for until ctx ends, at
// most one per notifyGap: the commits of a burst are told together.
func (s *Store) runNotifier(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-s.tellWake:
		}
		s.notify(ctx)
		select {
		case <-ctx.Done():
			return
		case <-time.After(notifyGap):
		}
	}
}

// notifyGap is the least time between two notifications of one store.
// Each costs a round trip, a transaction on the server and a wake-up of
// every listening daemon; sent after every commit, a burst of 2,000
// transitions a second sent one for every second transition (ADR-0059).
// The others' views learn of a write up to this much later; a read on
// another daemon still sees it at once (DataVersion reads the feed's
// head, ADR-0053).
const notifyGap = 5 * time.Millisecond

// notify sends one notification if a commit is untold, naming the hosts
// the commits since the last one wrote (a payload, not a channel per host:
// a leader's view holds every host but some, which no set of channels it
// could LISTEN to names, and a host-less write is a host of its own). A
// failure leaves them untold for the next commit or Close; the listeners'
// own safety nets (the view's quiet period, DataVersion's feed head) cover
// the gap.
func (s *Store) notify(ctx context.Context) {
	s.untoldMu.Lock()
	t := s.untold
	s.untold = told{}
	s.untoldMu.Unlock()
	if !t.all && len(t.hosts) == 0 {
		return
	}
	n := notice{From: s.self, All: t.all || len(t.hosts) > maxNoticeHosts}
	if !n.All {
		n.Hosts = t.hosts
	}
	payload, err := json.Marshal(n)
	if err == nil && len(payload) > 7000 { // long host names
		payload, err = json.Marshal(notice{From: s.self, All: true})
	}
	if err == nil {
		_, err = s.pool.Exec(ctx, "SELECT pg_notify('"+notifyChannel+"', $1)", string(payload))
	}
	if err != nil {
		s.keepUntold(&t) // told by the next commit's notification, or Close's
	}
}

// newSelf is a store's name in its notifications' payload: the listener
// skips its own (the commit moved the version already), which would
// otherwise wake the view once more per burst.
func newSelf() string {
	b := make([]byte, 8)
	_, _ = rand.Read(b) // crypto/rand.Read never fails
	return hex.EncodeToString(b)
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

// DataVersion is a number that moves whenever anything is committed: heard
// notifications plus this store's own commits (at once). It folds in the feed's
// head after waiting for the visibility horizon to pass transactions ended
// before the call (settle, at most settleCeiling), so a read sees every write
// acknowledged before it across the fleet. The value itself means nothing.
func (s *Store) DataVersion(ctx context.Context) (int64, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	if !s.listening.Load() {
		return s.version.Add(1), nil
	}
	v := s.version.Load()
	st, err := s.feedState(ctx)
	if err != nil {
		return 0, err
	}
	if st.xmin < st.xmax {
		if st, err = s.settle(ctx, st); err != nil {
			return 0, err
		}
	}
	// The version and the heads' transactions only grow, and a head's
	// transaction grows whenever rows come below the horizon (they are of
	// transactions above every row read before), so the sum moves
	// whenever anything readable does.
	return v + st.head.RevisionTx + st.head.SeqTx, nil
}

// settleCeiling bounds DataVersion's wait for the visibility horizon: a
// transaction open longer than this is not one of the store's (a single
// statement, or a registration's few), and the read answers with what is
// below the horizon rather than wait for it.
const settleCeiling = 500 * time.Millisecond

// settle waits until the horizon passes every transaction that had ended
// when st was read (its xmax), and returns the state read then; or, past
// settleCeiling or when the horizon is the very one a wait gave up on
// before, st as it stands, with follow to tell the view when it passes.
func (s *Store) settle(ctx context.Context, st feedState) (feedState, error) {
	target := st.xmax
	if s.stuck.Load() == st.xmin {
		s.follow(target)
		return st, nil
	}
	deadline := time.Now().Add(settleCeiling)
	xmin := st.xmin
	// The horizon alone is polled (no index read), the heads once it has
	// passed; a commit takes a millisecond or more, so the first look is
	// after one.
	for pause := time.Millisecond; ; pause = min(2*pause, 16*time.Millisecond) {
		if time.Now().After(deadline) {
			s.stuck.Store(xmin)
			s.follow(target)
			return st, nil
		}
		t := time.NewTimer(pause)
		select {
		case <-ctx.Done():
			t.Stop()
			return feedState{}, ctx.Err()
		case <-t.C:
		}
		var err error
		if xmin, err = s.horizon(ctx); err != nil {
			return feedState{}, err
		}
		if xmin >= target {
			return s.feedState(ctx)
		}
	}
}

// horizon is the visibility horizon now: every transaction below it has
// ended.
func (s *Store) horizon(ctx context.Context) (int64, error) {
	var xmin int64
	if err := s.pool.QueryRow(ctx, "SELECT pg_snapshot_xmin(pg_current_snapshot())::text::bigint").Scan(&xmin); err != nil {
		return 0, fmt.Errorf("read the visibility horizon: %w", classify(err))
	}
	return xmin, nil
}

// follow asks the horizon watcher to move the version once the horizon
// reaches target: rows held back behind a long transaction are then read
// without waiting for the next commit's notification.
func (s *Store) follow(target int64) {
	for {
		cur := s.behind.Load()
		if cur >= target || s.behind.CompareAndSwap(cur, target) {
			break
		}
	}
	select {
	case s.followWake <- struct{}{}:
	default:
	}
}

// followPeriod is how often the horizon watcher looks while rows are
// held back.
const followPeriod = 50 * time.Millisecond

// runFollower is the horizon watcher (follow) until ctx ends: one small
// query per followPeriod while a target is pending, none otherwise.
func (s *Store) runFollower(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-s.followWake:
		}
		for s.behind.Load() > 0 {
			select {
			case <-ctx.Done():
				return
			case <-time.After(followPeriod):
			}
			xmin, err := s.horizon(ctx)
			if err != nil {
				continue // the store is failing: the listener's loss moves the version
			}
			if target := s.behind.Load(); xmin >= target && s.behind.CompareAndSwap(target, 0) {
				s.bump()
			}
		}
	}
}

// feedState is the feed's head and the visibility horizon of one snapshot.
type feedState struct {
	head store.Cursor
	// xmin is the snapshot's horizon: every transaction below it has
	// ended, so rows below it are final; xmax is one past the newest
	// transaction that had ended.
	xmin, xmax int64
}

// feedStateQuery reads, in one snapshot, the horizon and the newest row of
// each table below it, in feed order (the feed indexes of migration 0004).
const feedStateQuery = `SELECT pg_snapshot_xmin(snap.s)::text::bigint, pg_snapshot_xmax(snap.s)::text::bigint,
	COALESCE(e.xid::text::bigint, 0), COALESCE(e.revision, 0), COALESCE(t.xid::text::bigint, 0), COALESCE(t.seq, 0)
	FROM (SELECT pg_current_snapshot() AS s) snap
	LEFT JOIN LATERAL (SELECT xid, revision FROM entities WHERE xid < pg_snapshot_xmin(snap.s)
		ORDER BY xid DESC, revision DESC LIMIT 1) e ON true
	LEFT JOIN LATERAL (SELECT xid, seq FROM transitions WHERE xid < pg_snapshot_xmin(snap.s)
		ORDER BY xid DESC, seq DESC LIMIT 1) t ON true`

func (s *Store) feedState(ctx context.Context) (feedState, error) {
	var st feedState
	err := s.pool.QueryRow(ctx, feedStateQuery).Scan(&st.xmin, &st.xmax,
		&st.head.RevisionTx, &st.head.Revision, &st.head.SeqTx, &st.head.Seq)
	if err != nil {
		return feedState{}, fmt.Errorf("read the change feed's head: %w", classify(err))
	}
	return st, nil
}

// ChangesSince reads entities and audit rows after the cursor in (transaction,
// revision/seq) order, at most limit each (< 1: 1000), only of transactions
// below the visibility horizon (pg_snapshot_xmin): any later commit sorts
// after, so a reader misses nothing and sees each row once (ADR-0053).
func (s *Store) ChangesSince(ctx context.Context, c store.Cursor, limit int) (store.Batch, error) {
	return s.ChangesFor(ctx, c, store.FeedFilter{Hosts: store.AllHosts()}, limit)
}

// ChangesFor is ChangesSince of the entities and audit rows of f.Hosts
// only (by the indexes on host and feed order when it names the hosts; a
// leader's "all but" reads in feed order and skips the others' rows), and
// of no audit rows with f.EntitiesOnly.
func (s *Store) ChangesFor(ctx context.Context, c store.Cursor, f store.FeedFilter, limit int) (store.Batch, error) {
	if limit < 1 {
		limit = 1000
	}
	b := store.Batch{Next: c}
	// A read of every host but some scans the feed in order and skips
	// the others' rows; a cursor left at the last row kept would scan
	// them again at every read, as many as the others wrote since. The
	// head below the horizon, read first, is where such a read that
	// reached the end may go on from: every row up to it was below the
	// horizon then, so final and seen by the reads that follow.
	var head store.Cursor
	skips := f.Hosts.All && !f.Hosts.Every()
	if skips {
		st, err := s.feedState(ctx)
		if err != nil {
			return store.Batch{}, err
		}
		head = st.head
	}
	hostClause := ""
	args := []any{c.RevisionTx, c.Revision, limit}
	if !f.Hosts.Every() {
		hostClause = " AND host_id = ANY($4)"
		if f.Hosts.All {
			hostClause = " AND host_id <> ALL($4)"
		}
		args = append(args, f.Hosts.List)
	}
	rows, err := s.pool.Query(ctx, "SELECT xid::text::bigint, "+rowcodec.EntityColumns+` FROM entities
		WHERE xid < pg_snapshot_xmin(pg_current_snapshot()) AND (xid, revision) > ($1::bigint::text::xid8, $2)`+hostClause+`
		ORDER BY xid, revision LIMIT $3`, args...)
	if err != nil {
		return store.Batch{}, fmt.Errorf("read changed entities: %w", classify(err))
	}
	var sc rowcodec.EntityScanner
	for rows.Next() {
		var xid int64
		e, err := sc.Scan(withXid{rows, &xid})
		if err != nil {
			rows.Close()
			return store.Batch{}, fmt.Errorf("read changed entities: %w", err)
		}
		b.Entities = append(b.Entities, e)
		b.Next.Revision, b.Next.RevisionTx = e.Revision, xid
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return store.Batch{}, fmt.Errorf("read changed entities: %w", classify(err))
	}
	if skips && len(b.Entities) < limit && feedAfter(head.RevisionTx, head.Revision, b.Next.RevisionTx, b.Next.Revision) {
		b.Next.RevisionTx, b.Next.Revision = head.RevisionTx, head.Revision
	}
	if f.EntitiesOnly {
		b.More = len(b.Entities) == limit
		return b, nil
	}
	// The audit rows of the same hosts (the index on host, xid and seq of
	// migration 0006).
	args[0], args[1] = c.SeqTx, c.Seq
	rows, err = s.pool.Query(ctx, "SELECT xid::text::bigint, "+rowcodec.AuditColumns+` FROM transitions
		WHERE xid < pg_snapshot_xmin(pg_current_snapshot()) AND (xid, seq) > ($1::bigint::text::xid8, $2)`+hostClause+`
		ORDER BY xid, seq LIMIT $3`, args...)
	if err != nil {
		return store.Batch{}, fmt.Errorf("read new transitions: %w", classify(err))
	}
	b.Transitions = []store.AuditRow{}
	for rows.Next() {
		var xid int64
		r, err := rowcodec.ScanAudit(withXid{rows, &xid})
		if err != nil {
			rows.Close()
			return store.Batch{}, fmt.Errorf("read new transitions: %w", err)
		}
		b.Transitions = append(b.Transitions, r)
		b.Next.Seq, b.Next.SeqTx = r.Seq, xid
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return store.Batch{}, fmt.Errorf("read new transitions: %w", classify(err))
	}
	if skips && len(b.Transitions) < limit && feedAfter(head.SeqTx, head.Seq, b.Next.SeqTx, b.Next.Seq) {
		b.Next.SeqTx, b.Next.Seq = head.SeqTx, head.Seq
	}
	b.More = len(b.Entities) == limit || len(b.Transitions) == limit
	return b, nil
}

// feedAfter says whether the feed position (tx, n) comes after (tx0, n0):
// by transaction, then by number.
func feedAfter(tx, n, tx0, n0 int64) bool {
	return tx > tx0 || tx == tx0 && n > n0
}

// withXid scans a row whose first column is the writing transaction, then
// the columns a rowcodec scanner reads.
type withXid struct {
	rows pgx.Rows
	xid  *int64
}

func (w withXid) Scan(dest ...any) error {
	return w.rows.Scan(append([]any{w.xid}, dest...)...)
}

// FeedHead is the cursor of the newest change below the visibility
// horizon: a reader that starts there sees every change after it, those
// held back by a transaction still open included. It reads the rows, not
// the sequences: a sequence's last value may be a number an uncommitted
// (or rolled back) writer holds.
func (s *Store) FeedHead(ctx context.Context) (store.Cursor, error) {
	st, err := s.feedState(ctx)
	if err != nil {
		return store.Cursor{}, err
	}
	return st.head, nil
}
