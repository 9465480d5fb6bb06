package postgres_test

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"watchdog/internal/testenv"
	"watchdog/store"
	"watchdog/store/postgres"
)

// TestHorizonHeldByAnotherTransaction: a transaction that is none of the
// store's (it writes no watchdog row, so its end notifies nobody) holds
// the visibility horizon while the store writes. The feed holds the write
// back, DataVersion gives up waiting for the horizon instead of hanging,
// and once the transaction ends the store tells its reader by itself
// (Changes), and the write comes through the feed.
func TestHorizonHeldByAnotherTransaction(t *testing.T) {
	dsn := testenv.Postgres(t)
	ctx := context.Background()
	s, err := postgres.Open(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	head, err := s.FeedHead(ctx)
	if err != nil {
		t.Fatal(err)
	}
	other, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close(ctx)
	tx, err := other.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx) //nolint:errcheck // committed below
	// An xid of its own: the transaction holds the horizon.
	if _, err := tx.Exec(ctx, "SELECT pg_current_xact_id()"); err != nil {
		t.Fatal(err)
	}

	running := "running"
	if _, err := s.Register(ctx, store.Entity{Type: "session", ID: "s1", Lifecycle: &running}, "orchestrator", time.Now()); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if _, err := s.DataVersion(ctx); err != nil {
		t.Fatal(err)
	}
	t.Logf("DataVersion answered after %v with the horizon held", time.Since(start))
	if b, err := s.ChangesSince(ctx, head, 100); err != nil || len(b.Entities)+len(b.Transitions) != 0 {
		t.Fatalf("the feed read past a transaction still open: %+v %v", b, err)
	}
	// Drain what the write itself told.
	for drained := false; !drained; {
		select {
		case <-s.Changes():
		default:
			drained = true
		}
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	select {
	case <-s.Changes():
	case <-time.After(time.Minute):
		t.Fatal("the horizon passed and the store told nobody within a minute")
	}
	testenv.Eventually(t, "the held-back write through the feed", time.Minute, func() (bool, string) {
		b, err := s.ChangesSince(ctx, head, 100)
		return err == nil && len(b.Entities) == 1 && len(b.Transitions) == 1, "entities and audit rows not yet read"
	})
}
