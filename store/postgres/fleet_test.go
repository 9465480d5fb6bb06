package postgres_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"watchdog/attention"
	"watchdog/internal/testenv"
	"watchdog/live"
	"watchdog/state"
	"watchdog/store"
	"watchdog/store/postgres"
	"watchdog/transitions"
	"watchdog/wire"
)

// TestFleetReadsByIndex: on PostgreSQL, the write path leaves each row's
// derived columns fresh (migration 0007), a row written beside it is
// derived by the reader, and the fleet-wide list and queue read by index
// (live.View.ListPage, ForQueue) are what a view of every host answers.
func TestFleetReadsByIndex(t *testing.T) {
	ctx := context.Background()
	st, w, clock, dsn := writerOn(t, time.Unix(1_800_000_000, 0))
	running := "running"
	for i := range 60 {
		id := fmt.Sprintf("s%02d", i)
		if _, err := w.Register(ctx, transitions.Registration{
			Entity: store.Entity{Type: "session", ID: id, HostID: fmt.Sprintf("h%d", i%3), Lifecycle: &running}, Actor: transitions.ActorOrchestrator,
		}); err != nil {
			t.Fatal(err)
		}
		clock.Advance(time.Second)
		switch i % 4 {
		case 1:
			if _, err := w.Transition(ctx, transitions.Request{Type: "session", ID: id, To: "failed", Actor: transitions.ActorOrchestrator,
				Reason: &state.StateReason{Code: state.RunFailedExitNonzero}}); err != nil {
				t.Fatal(err)
			}
		case 2:
			e, err := st.Get(ctx, "session", id)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := st.RecordObservation(ctx, "session", id, store.Observation{Health: state.HealthStalled, Delivery: state.DeliveryNotExpected,
				Reasons: []state.StateReason{{Code: state.RunHealthStalled, Message: "no heartbeat"}}, HealthSince: clock.Now(), At: clock.Now(), SeenSeq: e.LastSeq}); err != nil {
				t.Fatal(err)
			}
		case 3:
			if err := st.RecordHeartbeat(ctx, "session", id, clock.Now(), "on"); err != nil {
				t.Fatal(err)
			}
		}
	}
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var stale int
	if err := conn.QueryRow(ctx, "SELECT COUNT(*) FROM entities WHERE derived_rev IS DISTINCT FROM revision").Scan(&stale); err != nil || stale != 0 {
		t.Fatalf("%d rows stale after the write path's writes (%v)", stale, err)
	}
	// Beside the write path: stale until a fleet read derives it.
	if _, err := conn.Exec(ctx, "UPDATE entities SET health = 'stalled', reasons = $1 WHERE id = 's00'",
		`[{"code":"run.health.stalled","message":"x","claim_status":"observed","confidence":1,"evidence":[]}]`); err != nil {
		t.Fatal(err)
	}

	now := clock.Now()
	all := live.New(st, clock.Now, 0)
	if err := all.Load(ctx); err != nil {
		t.Fatal(err)
	}
	one := live.New(st, clock.Now, 0)
	one.SetHosts(func() store.Hosts { return store.Only("h0") })
	if err := one.Load(ctx); err != nil {
		t.Fatal(err)
	}
	head, err := st.FeedHead(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var want []wire.Entity
	all.Each("", func(e *live.Entry) { want = append(want, wire.FromDerived(e.Entity, e.State, nil, nil, now)) })
	wire.SortEntities(want)
	got := walkList(t, store.ListQuery{Limit: 7}, now, func(q store.ListQuery, read int) live.ListResult {
		res, ok, err := one.ListPage(ctx, "", true, q, now)
		if err != nil || !ok || res.Total != len(want) {
			t.Fatalf("ListPage: ok %v, total %d of %d, %v", ok, res.Total, len(want), err)
		}
		if res.Before != read {
			t.Fatalf("%d before the page, the walk has read %d", res.Before, read)
		}
		return res
	})
	if js(t, got) != js(t, want) {
		t.Errorf("the list by index differs from the view's:\n%s\n%s", js(t, got), js(t, want))
	}
	if after, err := st.FeedHead(ctx); err != nil || after != head {
		t.Errorf("the fleet read moved the feed: %+v, then %+v (%v)", head, after, err)
	}
	// Each order and filter, walked in pages of 7: every page's counts
	// and rows as a view of every host answers them (the counts ride
	// with the page; a walk's end, and a filter that selects nothing,
	// count on their own).
	for _, c := range []struct {
		name string
		q    store.ListQuery
		keep func(e *live.Entry) bool
	}{
		{"by id", store.ListQuery{ByID: true}, func(*live.Entry) bool { return true }},
		{"failed only", store.ListQuery{Severities: []state.Severity{state.SeverityCritical, state.SeverityWarning}},
			func(e *live.Entry) bool {
				return !e.State.Legacy() && (e.State.Severity == state.SeverityCritical || e.State.Severity == state.SeverityWarning)
			}},
		{"another type", store.ListQuery{Type: "workflow"}, func(e *live.Entry) bool { return e.Entity.Type == "workflow" }},
	} {
		t.Run(c.name, func(t *testing.T) {
			// A row stale again (written beside the write path): the
			// first page derives it and reads again, with the counts or
			// without (ADR-0058).
			if _, err := conn.Exec(ctx, "UPDATE entities SET label = $1 WHERE id = 's00'", c.name); err != nil {
				t.Fatal(err)
			}
			if err := all.Sync(ctx); err != nil {
				t.Fatal(err)
			}
			before, err := st.FeedHead(ctx)
			if err != nil {
				t.Fatal(err)
			}
			var want []wire.Entity
			all.Each("", func(e *live.Entry) {
				if c.keep(e) {
					want = append(want, wire.FromDerived(e.Entity, e.State, nil, nil, now))
				}
			})
			if len(want) == 0 && c.q.Type == "" {
				t.Fatal("the case selects nothing")
			}
			if c.q.ByID {
				slices.SortFunc(want, func(a, b wire.Entity) int { return strings.Compare(a.Type+"/"+a.ID, b.Type+"/"+b.ID) })
			} else {
				wire.SortEntities(want)
			}
			q := c.q
			q.Limit = 7
			got := walkList(t, q, now, func(q store.ListQuery, read int) live.ListResult {
				res, ok, err := one.ListPage(ctx, "", true, q, now)
				if err != nil || !ok {
					t.Fatalf("ListPage: ok %v, %v", ok, err)
				}
				if res.Total != len(want) || res.Before != read {
					t.Fatalf("total %d, %d before the page; want %d, %d", res.Total, res.Before, len(want), read)
				}
				return res
			})
			if js(t, got) != js(t, want) {
				t.Errorf("the list by index differs from the view's:\n%s\n%s", js(t, got), js(t, want))
			}
			if after, err := st.FeedHead(ctx); err != nil || after != before {
				t.Errorf("the fleet read moved the feed: %+v, then %+v (%v)", before, after, err)
			}
		})
	}
	if head, err = st.FeedHead(ctx); err != nil {
		t.Fatal(err)
	}
	hosts, legacy, ok, err := one.Scope(ctx, "session")
	if err != nil || !ok || legacy != 0 || fmt.Sprint(hosts) != "[h0 h1 h2]" {
		t.Errorf("scope: %v, %d legacy (%v, %v)", hosts, legacy, ok, err)
	}
	qv, err := one.ForQueue(ctx, "", true, now)
	if err != nil {
		t.Fatal(err)
	}
	aq := attention.Query{Limit: attention.MaxLimit, IncludeDismissed: true}
	if a, b := all.Attention(aq, now), qv.Attention(aq, now); a.Total == 0 || js(t, a) != js(t, b) {
		t.Errorf("the queue by index (%d) differs from the view's (%d)", b.Total, a.Total)
	}
	if after, err := st.FeedHead(ctx); err != nil || after != head {
		t.Errorf("the fleet read moved the feed: %+v, then %+v (%v)", head, after, err)
	}
}

func js(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// walkList walks a list by index in pages of q.Limit from its start, as
// a client follows its cursors: read reads one page (the caller checks
// its counts against read, how many rows came before it) and the
// entities come back in the wire's shape, in the order read.
func walkList(t *testing.T, q store.ListQuery, now time.Time, read func(q store.ListQuery, read int) live.ListResult) []wire.Entity {
	t.Helper()
	var got []wire.Entity
	for {
		pg := read(q, len(got)).Entries
		more := len(pg) > q.Limit
		if more {
			pg = pg[:q.Limit]
		}
		for i := range pg {
			got = append(got, wire.FromDerived(pg[i].Entity, pg[i].State, nil, nil, now))
		}
		if !more {
			return got
		}
		l := pg[len(pg)-1]
		k := wire.SeverityKeyOf(l.State, l.Entity.UpdatedAt, l.Entity.Type, l.Entity.ID)
		q.After = &store.ListKey{Rank: k.Rank, Updated: k.Updated, Type: k.Type, ID: k.ID}
	}
}

// writerOn opens a store on a new PostgreSQL database (closed when the
// test ends) and a write path on it whose clock starts at start; dsn
// names the database, for a test's own connection.
func writerOn(t *testing.T, start time.Time) (st *postgres.Store, w *transitions.Writer, clock *testenv.Clock, dsn string) {
	t.Helper()
	dsn = testenv.Postgres(t)
	b, err := store.Open(context.Background(), store.DriverPostgres, dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	st = b.(*postgres.Store)
	clock = testenv.NewClock(start)
	return st, &transitions.Writer{Store: st, Now: clock.Now}, clock, dsn
}
