package postgres_test

import (
	"context"
	"encoding/json"
	"fmt"
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
	dsn := testenv.Postgres(t)
	b, err := store.Open(ctx, store.DriverPostgres, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	st := b.(*postgres.Store)
	clock := testenv.NewClock(time.Unix(1_800_000_000, 0))
	w := &transitions.Writer{Store: st, Now: clock.Now}
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
	var got []wire.Entity
	q := store.ListQuery{Limit: 7}
	for {
		res, ok, err := one.ListPage(ctx, "", true, q, now)
		pg, total := res.Entries, res.Total
		if res.Before != len(got) {
			t.Fatalf("%d before the page, the walk has read %d", res.Before, len(got))
		}
		if err != nil || !ok || total != len(want) {
			t.Fatalf("ListPage: ok %v, total %d of %d, %v", ok, total, len(want), err)
		}
		more := len(pg) > q.Limit
		if more {
			pg = pg[:q.Limit]
		}
		for i := range pg {
			got = append(got, wire.FromDerived(pg[i].Entity, pg[i].State, nil, nil, now))
		}
		if !more {
			break
		}
		l := pg[len(pg)-1]
		k := wire.SeverityKeyOf(l.State, l.Entity.UpdatedAt, l.Entity.Type, l.Entity.ID)
		q.After = &store.ListKey{Rank: k.Rank, Updated: k.Updated, Type: k.Type, ID: k.ID}
	}
	if js(t, got) != js(t, want) {
		t.Errorf("the list by index differs from the view's:\n%s\n%s", js(t, got), js(t, want))
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
