package sqlite

import (
	"context"
	"testing"
	"watchdog/store"
)

// TestTransitionPages: the latest rows with their total, and pages after a
// seq, cover an entity's history exactly once, in order, while another
// entity's rows interleave in the same log.
func TestTransitionPages(t *testing.T) {
	s, _ := openTest(t)
	ctx := context.Background()
	for _, id := range []string{"a1", "other"} {
		if _, err := s.Register(ctx, store.Entity{Type: "agent", ID: id, Lifecycle: strp("idle")}, "orchestrator", unixAt(1)); err != nil {
			t.Fatal(err)
		}
	}
	flip := func(id string) {
		t.Helper()
		if _, _, err := s.ApplyTransition(ctx, "agent", id, func(cur store.Entity) (store.Change, error) {
			to := "busy"
			if cur.LifecycleOr("") == "busy" {
				to = "idle"
			}
			return store.Change{To: to, Actor: "orchestrator", At: unixAt(2)}, nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	const moves = 250
	for range moves {
		flip("a1")
		flip("other")
	}
	all, err := s.Transitions(ctx, "agent", "a1")
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != moves+1 { // the registration row too
		t.Fatalf("%d rows, want %d", len(all), moves+1)
	}

	latest, total, err := s.LatestTransitions(ctx, "agent", "a1", 100)
	if err != nil {
		t.Fatal(err)
	}
	if total != len(all) || len(latest) != 100 || latest[0].Seq != all[len(all)-100].Seq || latest[99].Seq != all[len(all)-1].Seq {
		t.Fatalf("LatestTransitions: %d rows (first seq %d), total %d; want the last 100 of %d, oldest first", len(latest), latest[0].Seq, total, len(all))
	}

	for _, limit := range []int{1, 7, 100, 1000} {
		var got []int64
		after := int64(0)
		for pages := 0; ; pages++ {
			if pages > len(all)+1 {
				t.Fatalf("limit %d: paging does not end", limit)
			}
			page, err := s.TransitionsAfter(ctx, "agent", "a1", after, limit)
			if err != nil {
				t.Fatal(err)
			}
			if len(page) > limit {
				t.Fatalf("limit %d: page of %d", limit, len(page))
			}
			if len(page) == 0 {
				break
			}
			for _, r := range page {
				if r.EntityID != "a1" {
					t.Fatalf("limit %d: row of %s", limit, r.EntityID)
				}
				got = append(got, r.Seq)
			}
			after = page[len(page)-1].Seq
		}
		if len(got) != len(all) {
			t.Fatalf("limit %d: paged %d rows, want %d", limit, len(got), len(all))
		}
		for i, r := range all {
			if got[i] != r.Seq {
				t.Fatalf("limit %d: row %d has seq %d, want %d", limit, i, got[i], r.Seq)
			}
		}
	}

	none, total, err := s.LatestTransitions(ctx, "agent", "absent", 100)
	if err != nil || len(none) != 0 || total != 0 {
		t.Fatalf("absent entity: %d rows, total %d, %v", len(none), total, err)
	}
}
