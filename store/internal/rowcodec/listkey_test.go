package rowcodec

import (
	"fmt"
	"testing"
	"time"

	"watchdog/store"
)

// TestListKeyset: the two orders and their predicates, as both drivers
// write them, each value bound once and named where it is compared.
func TestListKeyset(t *testing.T) {
	at := time.Unix(1_800_000_000, 0)
	k := &store.ListKey{Rank: 2, Updated: at, Type: "session", ID: "s1"}
	for _, tc := range []struct {
		q            store.ListQuery
		order, after string
		vals         []any
	}{
		{store.ListQuery{}, "sev_rank, updated_at DESC, type, id", "", nil},
		{store.ListQuery{ByID: true}, "type, id", "", nil},
		{store.ListQuery{ByID: true, After: k}, "type, id", "(type > $1 OR (type = $1 AND (id > $2)))", []any{"session", "s1"}},
		{store.ListQuery{After: k}, "sev_rank, updated_at DESC, type, id",
			"(sev_rank > $1 OR (sev_rank = $1 AND (updated_at < $2 OR (updated_at = $2 AND (type > $3 OR (type = $3 AND (id > $4)))))))",
			[]any{2, UnixArg(at), "session", "s1"}},
	} {
		var vals []any
		order, after := ListKeyset(&tc.q, func(v any) string { vals = append(vals, v); return fmt.Sprintf("$%d", len(vals)) })
		if order != tc.order || after != tc.after || fmt.Sprint(vals) != fmt.Sprint(tc.vals) {
			t.Errorf("%+v: %q %q %v, want %q %q %v", tc.q, order, after, vals, tc.order, tc.after, tc.vals)
		}
	}
}
