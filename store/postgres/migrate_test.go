package postgres_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"watchdog/internal/testenv"
	"watchdog/state"
	"watchdog/store"
	"watchdog/store/postgres"
)

// TestUpgradeFromTheFeedLock: a database made by the schema before
// migration 0004 (the feed lock), with entities and audit rows written
// under it, opens with this build: the migration stamps nothing on the
// old rows (transaction 0, all committed), the feed reads them first and
// in their old order, then what is written after, and the write path
// works on an old entity.
func TestUpgradeFromTheFeedLock(t *testing.T) {
	dsn := testenv.Postgres(t)
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	const before = 3 // the migrations before 0004
	files, err := filepath.Glob(filepath.Join("migrations", "*.sql"))
	if err != nil || len(files) < before+1 {
		t.Fatalf("migrations %v %v", files, err)
	}
	if _, err := conn.Exec(ctx, `CREATE TABLE schema_migrations (
		version integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())`); err != nil {
		t.Fatal(err)
	}
	for i, f := range files[:before] {
		body, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := conn.Exec(ctx, string(body)); err != nil {
			t.Fatalf("apply %s: %v", f, err)
		}
		if _, err := conn.Exec(ctx, "INSERT INTO schema_migrations (version, name) VALUES ($1, $2)", i+1, filepath.Base(f)); err != nil {
			t.Fatal(err)
		}
	}
	// Written as the old store wrote: the triggers take the feed lock and
	// draw the numbers; each registration its audit row, linked.
	for i := range 3 {
		id := fmt.Sprintf("old-%d", i)
		if _, err := conn.Exec(ctx, `INSERT INTO entities (type, id, lifecycle, created_at, updated_at) VALUES ('session', $1, 'running', 0, 0)`, id); err != nil {
			t.Fatal(err)
		}
		var seq int64
		if err := conn.QueryRow(ctx, `INSERT INTO transitions (seq, entity_type, entity_id, to_lifecycle, message, actor, at)
			VALUES (0, 'session', $1, 'running', 'registered', 'orchestrator', 0) RETURNING seq`, id).Scan(&seq); err != nil {
			t.Fatal(err)
		}
		if _, err := conn.Exec(ctx, "UPDATE entities SET last_seq = $1 WHERE type = 'session' AND id = $2", seq, id); err != nil {
			t.Fatal(err)
		}
	}

	s, err := postgres.Open(ctx, dsn)
	if err != nil {
		t.Fatalf("open the old database: %v", err)
	}
	defer s.Close()
	var version int
	if err := conn.QueryRow(ctx, "SELECT MAX(version) FROM schema_migrations").Scan(&version); err != nil || version != postgres.SchemaVersion() {
		t.Fatalf("schema version %d (%v), want %d", version, err, postgres.SchemaVersion())
	}
	b, err := s.ChangesSince(ctx, store.Cursor{}, 100)
	if err != nil {
		t.Fatal(err)
	}
	if len(b.Entities) != 3 || len(b.Transitions) != 3 || b.Next.RevisionTx != 0 || b.Next.SeqTx != 0 {
		t.Fatalf("the old rows through the feed: %d entities, %d audit rows, next %+v", len(b.Entities), len(b.Transitions), b.Next)
	}
	for i, e := range b.Entities {
		if e.ID != fmt.Sprintf("old-%d", i) || i > 0 && e.Revision <= b.Entities[i-1].Revision {
			t.Errorf("old entity %d: %s at revision %d, out of the old order", i, e.ID, e.Revision)
		}
	}

	dead := state.Observed(state.SystemHealthProcessDeadNoTerminal, "test")
	_, after, err := s.ApplyTransition(ctx, "session", "old-1", func(cur store.Entity) (store.Change, error) {
		return store.Change{To: "aborted", Terminal: true, Actor: "reaper", Reason: &dead, At: time.Unix(100, 0)}, nil
	})
	if err != nil || after.LifecycleOr("") != "aborted" {
		t.Fatalf("a transition of an old entity: %+v %v", after, err)
	}
	running := "running"
	if _, err := s.Register(ctx, store.Entity{Type: "session", ID: "new", Lifecycle: &running}, "orchestrator", time.Unix(100, 0)); err != nil {
		t.Fatal(err)
	}
	var got []string
	testenv.Eventually(t, "the writes after the upgrade through the feed", time.Minute, func() (bool, string) {
		nb, err := s.ChangesSince(ctx, b.Next, 100)
		got = got[:0]
		for _, e := range nb.Entities {
			got = append(got, e.ID+" "+e.LifecycleOr(""))
		}
		return err == nil && len(nb.Entities) == 2 && len(nb.Transitions) == 2 && nb.Next.RevisionTx > 0 && nb.Next.SeqTx > 0,
			fmt.Sprintf("entities %v, %d audit rows, next %+v, %v", got, len(nb.Transitions), nb.Next, err)
	})
	if got[0] != "old-1 aborted" || got[1] != "new running" {
		t.Errorf("after the upgrade the feed read %v, want old-1 aborted then new running", got)
	}
	head, err := s.FeedHead(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if nb, err := s.ChangesSince(ctx, head, 100); err != nil || len(nb.Entities)+len(nb.Transitions) != 0 {
		t.Errorf("read from the head %+v: %+v %v", head, nb, err)
	}
}
