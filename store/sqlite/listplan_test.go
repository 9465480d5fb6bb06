package sqlite

import (
	"context"
	"strings"
	"testing"
	"time"

	"watchdog/store"
)

// TestPagedListWalksThePrimaryKey: a page is read by walking the primary
// key from its after-key, never by sorting what an index found (which
// would sort every remaining row of the host for each page: a sweep of
// 100,000 in pages would sort millions of rows). The plan is SQLite's
// choice on an empty table, as on a full one without statistics.
func TestPagedListWalksThePrimaryKey(t *testing.T) {
	s, _ := openTest(t)
	after := store.Key{Type: "session", ID: "s-1"}
	for _, tc := range []struct {
		name string
		f    store.Filter
	}{
		{"the sweep's", store.Filter{HostID: "h", AlsoRemoteLive: true, AlsoHostless: true, OpenOnly: true, EndedSince: time.Unix(1e9, 0), Limit: 1000, After: after}},
		{"the sweep's first page", store.Filter{HostID: "h", AlsoRemoteLive: true, AlsoHostless: true, OpenOnly: true, EndedSince: time.Unix(1e9, 0), Limit: 1000}},
		{"reap_phantoms'", store.Filter{HostID: "h", OpenOnly: true, AlsoHostless: true, Limit: 1000, After: after}},
		{"one host's open ones", store.Filter{HostID: "h", OpenOnly: true, Limit: 1000, After: after}},
		{"the dead ones", store.Filter{HostID: "h", OpenOnly: true, DeadOnly: true, Limit: 1000}},
	} {
		p := listPlan(t, s, tc.f)
		if !strings.Contains(p, "sqlite_autoindex_entities_1") || strings.Contains(p, "TEMP B-TREE") {
			t.Errorf("%s: plan %q, want a walk of the primary key and no sort", tc.name, p)
		}
	}
}

// TestDueJobsReadByIndex: enforce_terminal's dead ones and reap_phantoms'
// candidates (store.Filter.DeadOnly, PhantomBefore) are searched in their
// partial indexes (migration 0016), never found by a walk of the host's
// open entities, whatever the page.
func TestDueJobsReadByIndex(t *testing.T) {
	s, _ := openTest(t)
	after := store.Key{Type: "session", ID: "s-1"}
	reap := store.Filter{HostID: "h", OpenOnly: true, AlsoHostless: true, PhantomBefore: time.Unix(1e9, 0), Reconciled: []string{"play", "show", "team"}, Limit: 1000}
	next := reap
	next.After = after
	for _, tc := range []struct {
		name  string
		f     store.Filter
		index []string
	}{
		{"enforce_terminal's", store.Filter{HostID: "h", OpenOnly: true, DeadOnly: true}, []string{"idx_entities_dead (host_id=?)"}},
		{"reap_phantoms' first page", reap, []string{"idx_entities_phantom (host_id=?)", "idx_entities_open_by_host (host_id=? AND type=?)"}},
		{"reap_phantoms' next page", next, []string{"idx_entities_phantom (host_id=? AND (type,id)>(?,?))", "idx_entities_open_by_host (host_id=? AND type=?)"}},
		{"the phantoms of one host", store.Filter{HostID: "h", OpenOnly: true, PhantomBefore: time.Unix(1e9, 0)}, []string{"idx_entities_phantom (host_id=?)"}},
	} {
		p := listPlan(t, s, tc.f)
		for _, ix := range tc.index {
			if !strings.Contains(p, "SEARCH entities USING INDEX "+ix) {
				t.Errorf("%s: plan %q, want a search of %s", tc.name, p, ix)
			}
		}
		if strings.Contains(p, "SCAN entities") {
			t.Errorf("%s: plan %q walks the table", tc.name, p)
		}
	}
}

// listPlan is SQLite's plan for f's list query, its details joined by "; ".
func listPlan(t *testing.T, s *Store, f store.Filter) string {
	t.Helper()
	q, args := listQuery(f)
	rows, err := s.db.QueryContext(context.Background(), "EXPLAIN QUERY PLAN "+q, args...)
	if err != nil {
		t.Fatalf("explain %q: %v", q, err)
	}
	defer rows.Close()
	var plan []string
	for rows.Next() {
		var id, parent, unused int
		var detail string
		if err := rows.Scan(&id, &parent, &unused, &detail); err != nil {
			t.Fatal(err)
		}
		plan = append(plan, detail)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return strings.Join(plan, "; ")
}
