package rowcodec

import (
	"strings"

	"watchdog/store"
)

// keyCol is one column of the list's keyset and its direction.
type keyCol struct {
	col  string
	desc bool
	of   func(k *store.ListKey) any
}

// The list's two orders (wire.ListOrder), one definition both drivers
// write their ORDER BY and their "past the cursor" predicate from.
var (
	severityKey = []keyCol{
		{"sev_rank", false, func(k *store.ListKey) any { return k.Rank }},
		{"updated_at", true, func(k *store.ListKey) any {
			if a := UnixArg(k.Updated); a != nil {
				return a
			}
			return 0.0
		}},
		{"type", false, func(k *store.ListKey) any { return k.Type }},
		{"id", false, func(k *store.ListKey) any { return k.ID }},
	}
	idKey = severityKey[2:]
)

// ListKeyset is q's ORDER BY and, with q.After, the predicate keeping the
// rows past it ("" without), each value bound by arg (which returns its
// placeholder: "?" for SQLite, "$n" for PostgreSQL).
func ListKeyset(q *store.ListQuery, arg func(v any) string) (order, after string) {
	cols := severityKey
	if q.ByID {
		cols = idKey
	}
	names := make([]string, len(cols))
	for i, c := range cols {
		names[i] = c.col
		if c.desc {
			names[i] += " DESC"
		}
	}
	if q.After != nil {
		after = pastKey(cols, q.After, arg)
	}
	return strings.Join(names, ", "), after
}

// pastKey is (c0 > v0 OR (c0 = v0 AND (c1 > v1 OR …))), each comparison
// turned for a descending column.
func pastKey(cols []keyCol, k *store.ListKey, arg func(v any) string) string {
	c := cols[0]
	v := arg(c.of(k))
	op := " > "
	if c.desc {
		op = " < "
	}
	if len(cols) == 1 {
		return "(" + c.col + op + v + ")"
	}
	return "(" + c.col + op + v + " OR (" + c.col + " = " + v + " AND " + pastKey(cols[1:], k, arg) + "))"
}
