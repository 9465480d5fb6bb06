package postgres_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"watchdog/internal/testenv"
	"watchdog/store"
	"watchdog/store/postgres"
)

// TestLeaderLock: one session holds the lock at a time; the holder proves
// it at each try; a release, or the holder's connection killed by the
// server, frees it for another at its next try, and the cut-off holder
// hears so at its own next try (an error: its hold is gone).
func TestLeaderLock(t *testing.T) {
	dsn := testenv.Postgres(t)
	ctx := context.Background()
	a, err := postgres.Open(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b, err := postgres.Open(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	const key = 42
	la, lb := a.LeaderLock(key, "watchdog leader a"), b.LeaderLock(key, "watchdog leader b")
	defer la.Release(ctx) //nolint:errcheck // cleanup
	defer lb.Release(ctx) //nolint:errcheck // cleanup

	steps := []struct {
		name        string
		l           store.SessionLock
		held, fresh bool
		wantErr     bool
		before      func()
	}{
		{name: "a takes the free lock", l: la, held: true, fresh: true},
		{name: "a proves its hold", l: la, held: true},
		{name: "b is refused while a holds it", l: lb},
		{name: "b, asking again on its kept connection, is refused again", l: lb},
		{name: "b takes it once a released it", l: lb, held: true, fresh: true, before: func() {
			if err := la.Release(ctx); err != nil {
				t.Fatal(err)
			}
			if err := la.Release(ctx); err != nil {
				t.Fatalf("a second release: %v", err)
			}
		}},
		{name: "a is refused while b holds it", l: la},
		{name: "b, its connection terminated by the server, hears its hold is gone", l: lb, wantErr: true, before: func() {
			conn, err := pgx.Connect(ctx, dsn)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close(ctx)
			var n int
			if err := conn.QueryRow(ctx, `SELECT count(pg_terminate_backend(pid)) FROM pg_locks
				WHERE locktype = 'advisory' AND objid = $1 AND granted`, key).Scan(&n); err != nil || n != 1 {
				t.Fatalf("terminating the holder: %d sessions, %v", n, err)
			}
			// pg_terminate_backend signals the session; wait until it is
			// gone, so that b's next round trip cannot precede its end.
			testenv.Eventually(t, "the terminated session gone", time.Minute, func() (bool, string) {
				var n int
				err := conn.QueryRow(ctx, `SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND objid = $1`, key).Scan(&n)
				return err == nil && n == 0, fmt.Sprintf("%d locks, %v", n, err)
			})
		}},
		{name: "a takes the lock the terminated session held", l: la, held: true, fresh: true},
		{name: "b, on a new connection, is refused", l: lb},
	}
	holder := func() string {
		conn, err := pgx.Connect(ctx, dsn)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close(ctx)
		var name string
		if err := conn.QueryRow(ctx, `SELECT a.application_name FROM pg_locks l JOIN pg_stat_activity a USING (pid)
			WHERE l.locktype = 'advisory' AND l.objid = $1 AND l.granted`, key).Scan(&name); err != nil {
			t.Fatalf("who holds the lock: %v", err)
		}
		return name
	}
	for _, s := range steps {
		if s.before != nil {
			s.before()
		}
		held, fresh, err := s.l.Try(ctx)
		if held != s.held || fresh != s.fresh || (err != nil) != s.wantErr {
			t.Fatalf("%s: held %v fresh %v err %v; want held %v fresh %v error %v", s.name, held, fresh, err, s.held, s.fresh, s.wantErr)
		}
	}
	// What an operator sees: the holder by name, beside the lock.
	if got := holder(); got != "watchdog leader a" {
		t.Errorf("the lock's session is %q, want a's", got)
	}
}
