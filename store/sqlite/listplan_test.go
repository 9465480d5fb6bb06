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
		q, args := listQuery(tc.f)
		rows, err := s.db.QueryContext(context.Background(), "EXPLAIN QUERY PLAN "+q, args...)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		var plan []string
		for rows.Next() {
			var id, parent, unused int
			var detail string
			if err := rows.Scan(&id, &parent, &unused, &detail); err != nil {
				t.Fatal(err)
			}
			plan = append(plan, detail)
		}
		rows.Close()
		p := strings.Join(plan, "; ")
		if !strings.Contains(p, "sqlite_autoindex_entities_1") || strings.Contains(p, "TEMP B-TREE") {
			t.Errorf("%s: plan %q, want a walk of the primary key and no sort", tc.name, p)
		}
	}
}
