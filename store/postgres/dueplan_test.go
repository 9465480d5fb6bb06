package postgres_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"watchdog/internal/testenv"
	"watchdog/store"
	"watchdog/store/postgres"
)

// TestDueJobsReadByIndex: enforce_terminal's dead ones and reap_phantoms'
// candidates (store.Filter.DeadOnly, PhantomBefore) are read by their
// partial indexes (migration 0011), never by a walk of the host's open
// entities: on a host of 5,000 open entities, a few of them dead or
// orphaned, with the planner's statistics. The reconciled types' open
// entities are read by whichever index the planner prefers (the primary
// key's type prefix, or idx_entities_open_by_host), never a scan.
func TestDueJobsReadByIndex(t *testing.T) {
	ctx := context.Background()
	dsn := testenv.Postgres(t)
	b, err := store.Open(ctx, store.DriverPostgres, dsn)
	if err != nil {
		t.Fatal(err)
	}
	b.Close()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	for _, q := range []string{
		`INSERT INTO entities (type, id, host_id, lifecycle, health, created_at, updated_at)
			SELECT 'session', 's' || g, 'h' || (g % 2), 'running', 'running', 1e9, 1e9 FROM generate_series(1, 5000) g`,
		`UPDATE entities SET health = 'process_dead', dead_since = 1e9 WHERE id IN ('s2', 's4')`,
		`UPDATE entities SET health = 'orphaned' WHERE id IN ('s6', 's8')`,
		`INSERT INTO entities (type, id, host_id, lifecycle, created_at, updated_at) VALUES ('team', 't', '', 'active', 1e9, 1e9)`,
		`ANALYZE entities`,
	} {
		if _, err := conn.Exec(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	after := store.Key{Type: "session", ID: "s1"}
	cut := time.Unix(2e9, 0)
	for _, tc := range []struct {
		name  string
		f     store.Filter
		index []string
	}{
		{"enforce_terminal's", store.Filter{HostID: "h0", OpenOnly: true, DeadOnly: true}, []string{"idx_entities_dead"}},
		{"reap_phantoms' first page", store.Filter{HostID: "h0", OpenOnly: true, AlsoHostless: true, PhantomBefore: cut,
			Reconciled: []string{"play", "show", "team"}, Limit: 1000}, []string{"idx_entities_phantom"}},
		{"reap_phantoms' next page", store.Filter{HostID: "h0", OpenOnly: true, AlsoHostless: true, PhantomBefore: cut,
			Reconciled: []string{"play", "show", "team"}, Limit: 1000, After: after}, []string{"idx_entities_phantom"}},
		{"the phantoms of one host", store.Filter{HostID: "h0", OpenOnly: true, PhantomBefore: cut}, []string{"idx_entities_phantom"}},
	} {
		q, args := postgres.ListQuery(tc.f)
		rows, err := conn.Query(ctx, "EXPLAIN "+q, args...)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		var plan []string
		for rows.Next() {
			var line string
			if err := rows.Scan(&line); err != nil {
				t.Fatal(err)
			}
			plan = append(plan, line)
		}
		rows.Close()
		p := strings.Join(plan, "\n")
		for _, ix := range tc.index {
			if !strings.Contains(p, ix) {
				t.Errorf("%s: plan does not use %s:\n%s", tc.name, ix, p)
			}
		}
		if strings.Contains(p, "Seq Scan") {
			t.Errorf("%s: plan walks the table:\n%s", tc.name, p)
		}
	}
}
