package sqlite

import (
	"context"
	"database/sql"
	"path/filepath"
	"testing"
	"time"

	"watchdog/state"
	"watchdog/store"
)

// TestUpgradeStampsAuditRowsWithTheirHost: a database made by the schema
// before migration 0011, with audit rows of a host's entity and of a
// host-less one, opens with this build: the old rows get their entity's
// host, the append-only guard is back, and the write path stamps the new
// rows.
func TestUpgradeStampsAuditRowsWithTheirHost(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "w.db")
	db, err := sql.Open("sqlite", DSN(path))
	if err != nil {
		t.Fatal(err)
	}
	ms, err := loadMigrations()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`CREATE TABLE schema_migrations (
		version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TEXT NOT NULL DEFAULT (datetime('now')))`); err != nil {
		t.Fatal(err)
	}
	for _, m := range ms {
		if m.version >= 11 {
			break
		}
		if _, err := db.Exec(m.sql); err != nil {
			t.Fatalf("apply %s: %v", m.name, err)
		}
		if _, err := db.Exec("INSERT INTO schema_migrations (version, name) VALUES (?, ?)", m.version, m.name); err != nil {
			t.Fatal(err)
		}
	}
	for _, e := range []struct{ id, host string }{{"on-a", "a"}, {"hostless", ""}} {
		if _, err := db.Exec(`INSERT INTO entities (type, id, host_id, lifecycle, created_at, updated_at) VALUES ('session', ?, ?, 'running', 0, 0)`, e.id, e.host); err != nil {
			t.Fatal(err)
		}
		if _, err := db.Exec(`INSERT INTO transitions (entity_type, entity_id, to_lifecycle, message, actor, at)
			VALUES ('session', ?, 'running', 'registered', 'orchestrator', 0)`, e.id); err != nil {
			t.Fatal(err)
		}
	}
	db.Close()

	s, err := Open(ctx, path)
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
	if _, err := s.db.Exec("UPDATE transitions SET message = 'x'"); err == nil {
		t.Error("an UPDATE of the audit log after the upgrade was accepted")
	}
	dead := state.Observed(state.SystemHealthProcessDeadNoTerminal, "test")
	if _, _, err := s.ApplyTransition(ctx, "session", "on-a", func(store.Entity) (store.Change, error) {
		return store.Change{To: "aborted", Terminal: true, Actor: "reaper", Reason: &dead, At: time.Unix(100, 0)}, nil
	}); err != nil {
		t.Fatal(err)
	}
	b, err := s.ChangesFor(ctx, store.Cursor{}, store.FeedFilter{Hosts: store.Only("a")}, 10)
	if err != nil || len(b.Transitions) != 2 || b.Transitions[1].HostID != "a" || b.Transitions[1].To != "aborted" {
		t.Errorf("host a's audit rows after the upgrade: %+v %v", b.Transitions, err)
	}
}
