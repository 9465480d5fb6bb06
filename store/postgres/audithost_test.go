package postgres_test

import (
	"context"
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

// TestUpgradeStampsAuditRowsWithTheirHost: a database made by the schema
// before migration 0006, with audit rows of a host's entity and of a
// host-less one, opens with this build: the old rows get their entity's
// host, the append-only guard is back, and the write path (the function
// 0006 replaces) stamps the new rows.
func TestUpgradeStampsAuditRowsWithTheirHost(t *testing.T) {
	dsn := testenv.Postgres(t)
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	const before = 5 // the migrations before 0006
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
	for _, e := range []struct{ id, host string }{{"on-a", "a"}, {"hostless", ""}} {
		if _, err := conn.Exec(ctx, `INSERT INTO entities (type, id, host_id, lifecycle, created_at, updated_at) VALUES ('session', $1, $2, 'running', 0, 0)`, e.id, e.host); err != nil {
			t.Fatal(err)
		}
		if _, err := conn.Exec(ctx, `INSERT INTO transitions (seq, entity_type, entity_id, to_lifecycle, message, actor, at)
			VALUES (0, 'session', $1, 'running', 'registered', 'orchestrator', 0)`, e.id); err != nil {
			t.Fatal(err)
		}
	}

	s, err := postgres.Open(ctx, dsn)
	if err != nil {
		t.Fatalf("open the old database: %v", err)
	}
	defer s.Close()
	for id, want := range map[string]string{"on-a": "a", "hostless": ""} {
		rows, err := s.Transitions(ctx, "session", id)
		if err != nil || len(rows) != 1 || rows[0].HostID != want {
			t.Errorf("the old audit rows of %s: %+v %v, want host %q", id, rows, err, want)
		}
	}
	if _, err := conn.Exec(ctx, "UPDATE transitions SET message = 'x'"); err == nil {
		t.Error("an UPDATE of the audit log after the upgrade was accepted")
	}
	dead := state.Observed(state.SystemHealthProcessDeadNoTerminal, "test")
	if _, _, err := s.ApplyTransition(ctx, "session", "on-a", func(store.Entity) (store.Change, error) {
		return store.Change{To: "aborted", Terminal: true, Actor: "reaper", Reason: &dead, At: time.Unix(100, 0)}, nil
	}); err != nil {
		t.Fatal(err)
	}
	rows, err := s.Transitions(ctx, "session", "on-a")
	if err != nil || len(rows) != 2 || rows[1].HostID != "a" || rows[1].To != "aborted" {
		t.Errorf("host a's audit rows after the upgrade: %+v %v", rows, err)
	}
}
