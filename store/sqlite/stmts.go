package sqlite

import (
	"context"
	"database/sql"
	"fmt"
)

// prepared returns the cached prepared statement for query. Parsing and
// compiling SQL (and the triggers an UPDATE carries) is most of the CPU
// cost of a write with this driver, so the write path prepares once.
func (s *Store) prepared(ctx context.Context, query string) (*sql.Stmt, error) {
	s.stmtMu.Lock()
	defer s.stmtMu.Unlock()
	if st, ok := s.stmts[query]; ok {
		return st, nil
	}
	st, err := s.db.PrepareContext(ctx, query)
	if err != nil {
		return nil, fmt.Errorf("prepare: %w", err)
	}
	if s.stmts == nil {
		s.stmts = map[string]*sql.Stmt{}
	}
	s.stmts[query] = st
	return st, nil
}

// txExec runs a cached statement inside tx.
func (s *Store) txExec(ctx context.Context, tx *sql.Tx, query string, args ...any) (sql.Result, error) {
	st, err := s.prepared(ctx, query)
	if err != nil {
		return nil, err
	}
	return tx.StmtContext(ctx, st).ExecContext(ctx, args...)
}

// txQueryRow runs a cached query inside tx.
func (s *Store) txQueryRow(ctx context.Context, tx *sql.Tx, query string, args ...any) (*sql.Row, error) {
	st, err := s.prepared(ctx, query)
	if err != nil {
		return nil, err
	}
	return tx.StmtContext(ctx, st).QueryRowContext(ctx, args...), nil
}

func (s *Store) closeStmts() {
	s.stmtMu.Lock()
	defer s.stmtMu.Unlock()
	for _, st := range s.stmts {
		st.Close()
	}
	s.stmts = nil
}

// exec runs a cached statement outside a transaction: the hot single
// writes (observations, heartbeats, the write probe), which would parse
// their SQL and triggers again on every call otherwise.
func (s *Store) exec(ctx context.Context, query string, args ...any) (sql.Result, error) {
	st, err := s.prepared(ctx, query)
	if err != nil {
		return nil, err
	}
	return st.ExecContext(ctx, args...)
}
