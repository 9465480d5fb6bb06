package sqlite

import (
	"context"
	"fmt"
	"testing"
	"watchdog/store"
)

// TestChangesSince walks the feed in small batches across registrations,
// a transition and a heartbeat, and checks that every entity arrives at
// its latest content, in revision order, and every audit row once.
func TestChangesSince(t *testing.T) {
	s, _ := openTest(t)
	ctx := context.Background()
	for i := range 5 {
		registerAt(t, s, "session", fmt.Sprintf("s-%d", i), strp("running"))
	}
	moveTo(t, s, "session", "s-1", "completed", true, nil)
	if err := s.RecordHeartbeat(ctx, "session", "s-3", unixAt(300), "half"); err != nil {
		t.Fatal(err)
	}

	var (
		c       store.Cursor
		batches int
		seen    = map[string]store.Entity{}
		order   []string
		audit   []int64
	)
	for {
		b, err := s.ChangesSince(ctx, c, 2)
		if err != nil {
			t.Fatal(err)
		}
		batches++
		for _, e := range b.Entities {
			if e.Revision <= c.Revision {
				t.Errorf("entity %s at revision %d, not after the cursor's %d", e.ID, e.Revision, c.Revision)
			}
			seen[e.ID] = e
			order = append(order, e.ID)
		}
		for _, r := range b.Transitions {
			audit = append(audit, r.Seq)
		}
		c = b.Next
		if !b.More {
			break
		}
		if batches > 20 {
			t.Fatal("the feed never ends")
		}
	}
	if len(seen) != 5 {
		t.Fatalf("saw %d entities, want 5", len(seen))
	}
	// s-1 and s-3 were written again after s-4's registration: they come
	// last, once each.
	want := []string{"s-0", "s-2", "s-4", "s-1", "s-3"}
	if fmt.Sprint(order) != fmt.Sprint(want) {
		t.Errorf("revision order %v, want %v", order, want)
	}
	if got := seen["s-1"].LifecycleOr(""); got != "completed" {
		t.Errorf("s-1 arrives as %q, want its latest content (completed)", got)
	}
	if got := seen["s-3"].HeartbeatProgress; got != "half" {
		t.Errorf("s-3 arrives with progress %q, want half", got)
	}
	if len(audit) != 6 { // 5 registrations, 1 transition
		t.Errorf("audit seqs %v, want 6 rows", audit)
	}
	head, err := s.FeedHead(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if head != c {
		t.Errorf("head %+v, the walk ended at %+v", head, c)
	}
	b, err := s.ChangesSince(ctx, c, 2)
	if err != nil {
		t.Fatal(err)
	}
	if len(b.Entities)+len(b.Transitions) != 0 || b.More || b.Next != c {
		t.Errorf("read at the head: %+v", b)
	}
}

// TestDataVersionMoves checks the feed's cheap "anything new?" question on
// the pinned connection: it moves for this store's own writes (which go
// through other pooled connections), for a write by a second store on the
// same file (a CLI with --db), for a dismissal, and stays put otherwise.
func TestDataVersionMoves(t *testing.T) {
	s, path := openTest(t)
	ctx := context.Background()
	other, err := Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	version := func() int64 {
		t.Helper()
		v, err := s.DataVersion(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	for _, tc := range []struct {
		name  string
		write func() error
		moves bool
	}{
		{"nothing written", func() error { return nil }, false},
		{"a read", func() error { _, err := s.List(ctx, store.Filter{}); return err }, false},
		{"own registration", func() error {
			_, err := s.Register(ctx, store.Entity{Type: "session", ID: "own", Lifecycle: strp("running")}, "orchestrator", unixAt(100))
			return err
		}, true},
		{"own heartbeat", func() error { return s.RecordHeartbeat(ctx, "session", "own", unixAt(200), "") }, true},
		{"another store's registration", func() error {
			_, err := other.Register(ctx, store.Entity{Type: "session", ID: "cli", Lifecycle: strp("running")}, "orchestrator", unixAt(100))
			return err
		}, true},
		{"another store's dismissal", func() error {
			return other.UpsertDismissal(ctx, store.Dismissal{Fingerprint: "session:cli:run.health.stalled", EntityType: "session",
				EntityID: "cli", ReasonCode: "run.health.stalled", DismissedAt: unixAt(300)})
		}, true},
	} {
		before := version()
		if err := tc.write(); err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if moved := version() != before; moved != tc.moves {
			t.Errorf("%s: data version moved = %v, want %v", tc.name, moved, tc.moves)
		}
	}
}
