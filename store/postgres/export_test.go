package postgres

import (
	"context"

	"watchdog/store"
)

// Woken is how often DataVersion's counter moved: the commits of its
// own and the notifications it heard that it did not skip.
func (s *Store) Woken() int64 { return s.version.Load() }

// ColumnFixes is how many transitions' derived columns were written
// again after the transition (rederived).
func (s *Store) ColumnFixes() int64 { return s.columnFixes.Load() }

// Rederive runs what a transition runs when the columns it wrote are not
// those of the row it left (rederived).
func (s *Store) Rederive(ctx context.Context, typ, id string) {
	s.rederived(ctx, store.Derived{Type: typ, ID: id})
}

// ListQuery is List's query and its arguments for f.
func ListQuery(f store.Filter) (string, []any) { return listQuery(f) }
