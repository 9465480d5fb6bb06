package postgres_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"watchdog/live"
	"watchdog/state"
	"watchdog/store"
	"watchdog/transitions"
	"watchdog/wire"
)

// TestDroppedAgedOutByIndex: on PostgreSQL, a lone daemon's view that
// drops the entities aged out of the failure window (ADR-0060) reads its
// list by index, whole and by host, page by page across the window's
// boundary, each entity, and the counts as a view that keeps them does;
// a heartbeat to an aged-out entity (a row of the feed for an entity the
// view does not hold) leaves it dropped and counted once.
func TestDroppedAgedOutByIndex(t *testing.T) {
	ctx := context.Background()
	st, w, clock, _ := writerOn(t, time.Unix(1_800_000_000, 0))
	running := "running"
	add := func(i int) {
		id := fmt.Sprintf("s%02d", i)
		if _, err := w.Register(ctx, transitions.Registration{
			Entity: store.Entity{Type: "session", ID: id, HostID: fmt.Sprintf("h%d", i%3), Lifecycle: &running}, Actor: transitions.ActorOrchestrator,
		}); err != nil {
			t.Fatal(err)
		}
		clock.Advance(time.Second)
		if to := map[int]string{1: "failed", 2: "completed"}[i%3]; to != "" {
			if _, err := w.Transition(ctx, transitions.Request{Type: "session", ID: id, To: to, Actor: transitions.ActorOrchestrator,
				Reason: &state.StateReason{Code: state.RunFailedExitNonzero}}); err != nil {
				t.Fatal(err)
			}
		}
	}
	for i := range 40 {
		add(i)
	}
	clock.Advance(25 * time.Hour)
	for i := 40; i < 60; i++ {
		add(i)
	}
	kept, dropped := live.New(st, clock.Now, 0), live.New(st, clock.Now, 0)
	dropped.EvictAgedOut()
	for _, v := range []*live.View{kept, dropped} {
		if err := v.Load(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if dropped.Len() > kept.Len()-20 {
		t.Fatalf("the view that drops holds %d of %d", dropped.Len(), kept.Len())
	}
	check := func(stage string) {
		t.Helper()
		now := clock.Now()
		for _, v := range []*live.View{kept, dropped} {
			if err := v.Sync(ctx); err != nil {
				t.Fatal(err)
			}
		}
		if k, d := kept.Counts(now), dropped.Counts(now); fmt.Sprint(k) != fmt.Sprint(d) {
			t.Errorf("%s: counts %+v, the view that keeps %+v", stage, d, k)
		}
		for _, host := range []string{"", "h1"} {
			var want []wire.Entity
			kept.Each("", func(e *live.Entry) {
				if host == "" || e.Entity.HostID == host {
					want = append(want, wire.FromDerived(e.Entity, e.State, nil, nil, now))
				}
			})
			wire.SortEntities(want)
			got := walkList(t, store.ListQuery{Limit: 7}, now, func(q store.ListQuery, _ int) live.ListResult {
				res, ok, err := dropped.ListPage(ctx, host, host == "", q, now)
				if err != nil || !ok || res.Total != len(want) {
					t.Fatalf("%s: ListPage(%q): ok %v, total %d of %d, %v", stage, host, ok, res.Total, len(want), err)
				}
				return res
			})
			if js(t, got) != js(t, want) {
				t.Errorf("%s: host %q: the list by index differs from the view that keeps:\n%s\n%s", stage, host, js(t, got), js(t, want))
			}
		}
		kept.Each("", func(e *live.Entry) {
			got, ok := dropped.Get(e.Entity.Type, e.Entity.ID, now)
			if !ok {
				row, err := st.Get(ctx, e.Entity.Type, e.Entity.ID)
				if err != nil {
					t.Fatal(err)
				}
				got = live.EntryOf(row, now)
			}
			if js(t, got.Entity) != js(t, e.Entity) || js(t, got.State) != js(t, e.State) {
				t.Errorf("%s: %s reads otherwise", stage, e.Entity.ID)
			}
		})
	}
	check("loaded")
	// s01 failed in the first day: aged out, dropped.
	if _, ok := dropped.Get("session", "s01", clock.Now()); ok {
		t.Fatal("s01 is held")
	}
	if err := st.RecordHeartbeat(ctx, "session", "s01", clock.Now(), "late"); err != nil {
		t.Fatal(err)
	}
	check("a late heartbeat to an aged-out entity")
	if _, ok := dropped.Get("session", "s01", clock.Now()); ok {
		t.Error("s01 is held again after a heartbeat that leaves it aged out")
	}
}
