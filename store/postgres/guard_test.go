package postgres

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"

	"watchdog/internal/testenv"
)

// TestSessionsAreGuarded: every connection the store opens, pooled or its
// own, has the server end a transaction left idle (a client that stalled
// between BEGIN and COMMIT with the feed lock held) instead of letting it
// block every writer of the fleet, and a DSN that sets its own value wins.
func TestSessionsAreGuarded(t *testing.T) {
	dsn := testenv.Postgres(t)
	ctx := context.Background()
	s, err := Open(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var pooled string
	if err := s.pool.QueryRow(ctx, "SHOW idle_in_transaction_session_timeout").Scan(&pooled); err != nil {
		t.Fatal(err)
	}
	cfg, err := s.connConfig()
	if err != nil {
		t.Fatal(err)
	}
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var own string
	if err := conn.QueryRow(ctx, "SHOW idle_in_transaction_session_timeout").Scan(&own); err != nil {
		t.Fatal(err)
	}
	if pooled != "15s" || own != "15s" {
		t.Fatalf("idle_in_transaction_session_timeout: pooled %q, dedicated %q; want 15s", pooled, own)
	}

	c, err := pgx.ParseConfig(dsn)
	if err != nil {
		t.Fatal(err)
	}
	c.RuntimeParams["idle_in_transaction_session_timeout"] = "60000"
	guard(c)
	if got := c.RuntimeParams["idle_in_transaction_session_timeout"]; got != "60000" {
		t.Fatalf("the DSN's own value was overridden: %q", got)
	}
}
