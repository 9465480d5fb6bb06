package live

import (
	"cmp"
	"context"
	"database/sql"
	"encoding/json"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"watchdog/attention"
	"watchdog/internal/testenv"
	"watchdog/state"
	"watchdog/store"
	"watchdog/store/sqlite"
	"watchdog/transitions"
	"watchdog/wire"
)

// TestFleetReadsAgreeWithTheView: the fleet-wide reads by index
// (ListPage, ForQueue: the store's derived columns, ADR-0058) answer for
// a host exactly what that host's own daemon's view answers, and for every
// host what a view of every host answers: the list walked page by page in
// the severity order (with and without a severity filter), and the queue.
// The rows are written by raw SQL, as an older binary or a database
// upgraded to the columns leaves them (stale), so the first read derives
// them; a later change makes a row stale again and the next read sees it.
func TestFleetReadsAgreeWithTheView(t *testing.T) {
	st, cli := twoStores(t)
	ctx := context.Background()
	db := testenv.SQL(t, cli.Path())
	r := rand.New(rand.NewPCG(58, 1))
	seed(t, db, r, 0, 600)
	if _, err := db.Exec("UPDATE entities SET host_id = 'h' || (rowid % 3)"); err != nil {
		t.Fatal(err)
	}
	// Some ended entities whose process lives on: their items never age out.
	if _, err := db.Exec("UPDATE entities SET health = 'orphaned' WHERE terminal = 1 AND rowid % 5 = 0"); err != nil {
		t.Fatal(err)
	}
	now := func() time.Time { return testNow }
	view := func(hs store.Hosts) *View {
		v := New(st, now, 0)
		v.SetHosts(func() store.Hosts { return hs })
		if err := v.Load(ctx); err != nil {
			t.Fatal(err)
		}
		return v
	}
	other := view(store.Only("h0"))

	check := func(t *testing.T, own *View, host string, all bool) {
		t.Helper()
		headBefore, err := st.FeedHead(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range []struct {
			byID bool
			sev  []state.Severity
		}{{false, nil}, {false, []state.Severity{state.SeverityWarning, state.SeverityCritical}}, {true, nil}, {true, []state.Severity{state.SeverityNeutral}}} {
			byID, sev := c.byID, c.sev
			var want []wire.Entity
			own.Each("", func(e *Entry) {
				if (wire.EntityFilter{Severities: sev}).Keeps(&e.Entity, e.State) {
					want = append(want, wire.FromDerived(e.Entity, e.State, nil, nil, testNow))
				}
			})
			wire.SortEntities(want)
			if byID {
				slices.SortFunc(want, func(a, b wire.Entity) int { return cmp.Or(cmp.Compare(a.Type, b.Type), cmp.Compare(a.ID, b.ID)) })
			}
			var got []wire.Entity
			q := store.ListQuery{ByID: byID, Severities: sev, Limit: 37}
			for pages := 0; ; pages++ {
				res, ok, err := other.ListPage(ctx, host, all, q, testNow)
				pg, total := res.Entries, res.Total
				if res.Before != len(got) {
					t.Fatalf("page %d: %d before it, the walk has read %d", pages, res.Before, len(got))
				}
				if err != nil || !ok {
					t.Fatalf("ListPage: ok %v, %v", ok, err)
				}
				if total != len(want) {
					t.Fatalf("severities %v: total %d, the view has %d", sev, total, len(want))
				}
				more := len(pg) > q.Limit
				if more {
					pg = pg[:q.Limit]
				}
				for i := range pg {
					got = append(got, wire.FromDerived(pg[i].Entity, pg[i].State, nil, nil, testNow))
				}
				if !more {
					break
				}
				last := pg[len(pg)-1]
				k := wire.SeverityKeyOf(last.State, last.Entity.UpdatedAt, last.Entity.Type, last.Entity.ID)
				q.After = &store.ListKey{Rank: k.Rank, Updated: k.Updated, Type: k.Type, ID: k.ID}
				if pages > 100 {
					t.Fatal("the walk does not end")
				}
			}
			if len(want) < 20 || jsonString(t, got) != jsonString(t, want) {
				t.Errorf("by id %v, severities %v: the list by index (%d) differs from the view's (%d), or too few to tell", byID, sev, len(got), len(want))
			}
		}
		if all {
			// The page's host menu and legacy count.
			for _, typ := range []string{"", "session"} {
				want := map[string]bool{}
				legacy := 0
				own.Each("", func(e *Entry) {
					if e.Entity.HostID != "" && (typ == "" || e.Entity.Type == typ) {
						want[e.Entity.HostID] = true
					}
					if e.Legacy() {
						legacy++
					}
				})
				hosts, n, ok, err := other.Scope(ctx, typ)
				if err != nil || !ok || n != legacy || n == 0 || len(hosts) != len(want) {
					t.Errorf("type %q: scope %v, %d legacy (%v, %v); the view: %v, %d", typ, hosts, n, ok, err, want, legacy)
				}
				for _, h := range hosts {
					if !want[h] {
						t.Errorf("type %q: host %s is not the view's", typ, h)
					}
				}
			}
		}
		qv, err := other.ForQueue(ctx, host, all, testNow)
		if err != nil {
			t.Fatal(err)
		}
		if qv == other || qv == own {
			t.Fatal("ForQueue answered from a view, not from the store")
		}
		for _, q := range []attention.Query{{Limit: attention.MaxLimit, Host: host, IncludeDismissed: true}, {Limit: 10, Host: host}} {
			a, b := own.Attention(q, testNow), qv.Attention(q, testNow)
			if a.Total == 0 || jsonString(t, a) != jsonString(t, b) {
				t.Errorf("queue %+v: own view %d items, the store's answer %d, or they differ", q, a.Total, b.Total)
			}
		}
		// Writing the derived columns is no change of an entity.
		headAfter, err := st.FeedHead(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if headAfter != headBefore {
			t.Errorf("the fleet read moved the feed: %+v, then %+v", headBefore, headAfter)
		}
	}
	t.Run("one host", func(t *testing.T) { check(t, view(store.Only("h1")), "h1", false) })
	t.Run("every host", func(t *testing.T) { check(t, view(store.AllHosts()), "", true) })
	// A change by a writer that does not derive: the row is stale, and
	// the next read derives it again.
	if _, err := db.Exec(`UPDATE entities SET health = 'stalled', reasons = ? WHERE terminal = 0 AND health = 'running' AND host_id = 'h1' AND rowid % 2 = 0`, stalledJSON); err != nil {
		t.Fatal(err)
	}
	t.Run("after a change", func(t *testing.T) { check(t, view(store.Only("h1")), "h1", false) })
}

func jsonString(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestColumnsAreDerives: the stored columns are Derive's severity, rank
// and items, whatever the entity.
func TestColumnsAreDerives(t *testing.T) {
	st, cli := twoStores(t)
	ctx := context.Background()
	seed(t, testenv.SQL(t, cli.Path()), rand.New(rand.NewPCG(58, 2)), 0, 200)
	es, err := st.List(ctx, store.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range es {
		d, c := Derive(e, testNow), Columns(e)
		if c.Rank != wire.SeverityKeyOf(d.State, e.UpdatedAt, e.Type, e.ID).Rank || c.Items != len(d.Items) ||
			(c.Severity == "") != d.State.Legacy() || (!d.State.Legacy() && c.Severity != d.State.Severity) {
			t.Errorf("%s/%s: columns %+v, Derive %v %v with %d items", e.Type, e.ID, c, d.State.Severity, d.State.Legacy(), len(d.Items))
		}
		if aged := !c.Expires.IsZero() && c.Expires.Before(attention.Since(testNow, 0)); aged != (&Entry{Entity: e, Derived: d,
			arrived: attention.Arrived(e.EndedAt, e.LifecycleAt, e.UpdatedAt), lingers: attention.Lingers(d.State.Outcome, e.Health)}).AgedOut(testNow, 0) && len(d.Items) > 0 {
			t.Errorf("%s/%s: the columns age out %v, the view's rule says otherwise", e.Type, e.ID, aged)
		}
	}
}

// TestWritesStoreTheirColumns: each write of the write path (a
// registration, a transition, an observation, a heartbeat) leaves its row
// with fresh derived columns, Columns of the row as written, in the
// write's own transaction: a fleet-wide read finds nothing stale to
// derive. A heartbeat carries the columns to its new revision; a write
// beside the write path (raw SQL) leaves the row stale.
func TestWritesStoreTheirColumns(t *testing.T) {
	_, cli := twoStores(t)
	ctx := context.Background()
	db := testenv.SQL(t, cli.Path())
	clock := testenv.NewClock(testNow)
	w := &transitions.Writer{Store: cli, Now: clock.Now}
	type stored struct {
		rev, derivedRev sql.NullInt64
		d               store.Derived
		expires         sql.NullFloat64
	}
	check := func(t *testing.T, step string, wantFresh bool) {
		t.Helper()
		e, err := cli.Get(ctx, "session", "a")
		if err != nil {
			t.Fatal(err)
		}
		var s stored
		var sev string
		if err := db.QueryRow(`SELECT revision, derived_rev, sev_rank, severity, queue_items, queue_expires FROM entities WHERE type = 'session' AND id = 'a'`).
			Scan(&s.rev, &s.derivedRev, &s.d.Rank, &sev, &s.d.Items, &s.expires); err != nil {
			t.Fatal(err)
		}
		fresh := s.derivedRev.Valid && s.derivedRev.Int64 == s.rev.Int64
		if fresh != wantFresh {
			t.Fatalf("%s: derived_rev %v at revision %v: fresh %v, want %v", step, s.derivedRev, s.rev, fresh, wantFresh)
		}
		if !fresh {
			return
		}
		c := Columns(e)
		if s.d.Rank != c.Rank || state.Severity(sev) != c.Severity || s.d.Items != c.Items || s.expires.Valid != !c.Expires.IsZero() {
			t.Errorf("%s: stored %+v %q %v, Columns %+v", step, s.d, sev, s.expires, c)
		}
	}
	running := "running"
	if _, err := w.Register(ctx, transitions.Registration{
		Entity: store.Entity{Type: "session", ID: "a", HostID: "h1", Lifecycle: &running}, Actor: transitions.ActorOrchestrator,
	}); err != nil {
		t.Fatal(err)
	}
	check(t, "registered", true)
	if _, err := cli.RecordObservation(ctx, "session", "a", store.Observation{Health: state.HealthStalled, Delivery: state.DeliveryNotExpected,
		Reasons: []state.StateReason{{Code: state.RunHealthStalled, Message: "no heartbeat"}}, HealthSince: clock.Now(), At: clock.Now(), SeenSeq: mustGet(t, cli, "a").LastSeq}); err != nil {
		t.Fatal(err)
	}
	check(t, "observed", true)
	if err := cli.RecordHeartbeat(ctx, "session", "a", clock.Now(), "step 2"); err != nil {
		t.Fatal(err)
	}
	check(t, "heartbeat", true)
	if _, err := w.Transition(ctx, transitions.Request{Type: "session", ID: "a", To: "failed", Actor: transitions.ActorOrchestrator,
		Reason: &state.StateReason{Code: state.RunFailedExitNonzero}}); err != nil {
		t.Fatal(err)
	}
	check(t, "failed", true)
	if _, err := db.Exec(`UPDATE entities SET health = 'ok' WHERE type = 'session' AND id = 'a'`); err != nil {
		t.Fatal(err)
	}
	check(t, "written beside the write path", false)
	if err := cli.RecordHeartbeat(ctx, "session", "a", clock.Now(), "step 3"); err != nil {
		t.Fatal(err)
	}
	check(t, "a heartbeat on a stale row", false)
}

func mustGet(t *testing.T, st interface {
	Get(context.Context, string, string) (store.Entity, error)
}, id string) store.Entity {
	t.Helper()
	e, err := st.Get(context.Background(), "session", id)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// TestFillColumns: the daemon's fill at its start derives every stale row
// once (a database upgraded to the columns: every row), and finds
// nothing the second time.
func TestFillColumns(t *testing.T) {
	st, cli := twoStores(t)
	ctx := context.Background()
	seed(t, testenv.SQL(t, cli.Path()), rand.New(rand.NewPCG(58, 4)), 0, 2500)
	v := New(st, nil, 0)
	for i, want := range []int{2500, 0} {
		if n, err := v.FillColumns(ctx); err != nil || n != want {
			t.Fatalf("fill %d: %d rows (%v), want %d", i+1, n, err, want)
		}
	}
	if es, err := st.StaleDerived(ctx, store.AllHosts(), 10); err != nil || len(es) != 0 {
		t.Errorf("%d rows still stale (%v)", len(es), err)
	}
}

// TestUpgradeToDerivedColumns: an SQLite database at the schema before
// the derived columns (migration 0011), with entities written as the old
// store wrote them, opens with this build (0012 adds the columns, every
// row stale); the fleet-wide reads then answer as a view of every host,
// deriving the rows on the way, without moving the feed, and the daemon's
// fill finds nothing left.
func TestUpgradeToDerivedColumns(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "watchdog.db")
	db := testenv.SQL(t, path)
	files, err := filepath.Glob(filepath.Join("..", "store", "sqlite", "migrations", "*.sql"))
	if err != nil || len(files) != sqlite.SchemaVersion() || !strings.HasPrefix(filepath.Base(files[11]), "0012_") {
		t.Fatalf("migrations %v %v", files, err)
	}
	if _, err := db.Exec(`CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TEXT NOT NULL DEFAULT (datetime('now')))`); err != nil {
		t.Fatal(err)
	}
	for i, f := range files[:11] {
		body, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := db.Exec(string(body)); err != nil {
			t.Fatalf("apply %s: %v", f, err)
		}
		if _, err := db.Exec("INSERT INTO schema_migrations (version, name) VALUES (?, ?)", i+1, filepath.Base(f)); err != nil {
			t.Fatal(err)
		}
	}
	seed(t, db, rand.New(rand.NewPCG(58, 5)), 0, 300)
	if _, err := db.Exec("UPDATE entities SET host_id = 'h' || (rowid % 3)"); err != nil {
		t.Fatal(err)
	}
	st, err := sqlite.Open(ctx, path)
	if err != nil {
		t.Fatalf("open the old database: %v", err)
	}
	defer st.Close()
	if es, err := st.StaleDerived(ctx, store.AllHosts(), 1000); err != nil || len(es) != 300 {
		t.Fatalf("after the upgrade %d rows stale (%v), want every one", len(es), err)
	}
	now := func() time.Time { return testNow }
	all := New(st, now, 0)
	if err := all.Load(ctx); err != nil {
		t.Fatal(err)
	}
	one := New(st, now, 0)
	one.SetHosts(func() store.Hosts { return store.Only("h0") })
	if err := one.Load(ctx); err != nil {
		t.Fatal(err)
	}
	head, err := st.FeedHead(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var want []wire.Entity
	all.Each("", func(e *Entry) { want = append(want, wire.FromDerived(e.Entity, e.State, nil, nil, testNow)) })
	wire.SortEntities(want)
	res, ok, err := one.ListPage(ctx, "", true, store.ListQuery{Limit: 1000}, testNow)
	pg, total := res.Entries, res.Total
	if err != nil || !ok || total != 300 {
		t.Fatalf("ListPage: %d, %v, %v", total, ok, err)
	}
	got := make([]wire.Entity, len(pg))
	for i := range pg {
		got[i] = wire.FromDerived(pg[i].Entity, pg[i].State, nil, nil, testNow)
	}
	if jsonString(t, got) != jsonString(t, want) {
		t.Error("the upgraded store's list by index differs from the view's")
	}
	qv, err := one.ForQueue(ctx, "", true, testNow)
	if err != nil {
		t.Fatal(err)
	}
	aq := attention.Query{Limit: attention.MaxLimit, IncludeDismissed: true}
	if a, b := all.Attention(aq, testNow), qv.Attention(aq, testNow); a.Total == 0 || jsonString(t, a) != jsonString(t, b) {
		t.Errorf("the upgraded store's queue by index (%d) differs from the view's (%d)", b.Total, a.Total)
	}
	if after, err := st.FeedHead(ctx); err != nil || after != head {
		t.Errorf("deriving the upgraded rows moved the feed: %+v, then %+v (%v)", head, after, err)
	}
	if n, err := one.FillColumns(ctx); err != nil || n != 0 {
		t.Errorf("the fill after the reads derived %d rows (%v), want none", n, err)
	}
}
