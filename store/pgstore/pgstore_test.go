package pgstore_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"watchdog/internal/testenv"
	"watchdog/store/pgstore"
)

// TestOpenTogetherMigratesOnce: daemons starting at the same moment on a
// fresh database apply the migrations once, behind the advisory lock.
func TestOpenTogetherMigratesOnce(t *testing.T) {
	dsn := testenv.Postgres(t)
	ctx := context.Background()
	const n = 4
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			s, err := pgstore.Open(ctx, dsn)
			if err == nil {
				s.Close()
			}
			errs[i] = err
		})
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("open %d: %v", i, err)
		}
	}
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var rows, max int
	if err := conn.QueryRow(ctx, "SELECT COUNT(*), MAX(version) FROM schema_migrations").Scan(&rows, &max); err != nil {
		t.Fatal(err)
	}
	if rows != pgstore.SchemaVersion() || max != pgstore.SchemaVersion() {
		t.Errorf("schema_migrations: %d rows up to %d, want %d", rows, max, pgstore.SchemaVersion())
	}
}

// TestOpenRefusesNewerSchema: a database migrated by a newer watchdog is
// refused with a message that says to upgrade.
func TestOpenRefusesNewerSchema(t *testing.T) {
	dsn := testenv.Postgres(t)
	ctx := context.Background()
	s, err := pgstore.Open(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "INSERT INTO schema_migrations (version, name) VALUES (999, '0999_future.sql')"); err != nil {
		t.Fatal(err)
	}
	if s, err := pgstore.Open(ctx, dsn); err == nil {
		s.Close()
		t.Fatal("opened a database of a newer schema")
	} else if want := "upgrade watchdog"; !strings.Contains(err.Error(), want) {
		t.Errorf("error %q does not say %q", err, want)
	}
}

// TestTryLeader: one session holds the leader lock at a time; a release,
// or the holder's connection dying, lets the next one take it.
func TestTryLeader(t *testing.T) {
	dsn := testenv.Postgres(t)
	ctx := context.Background()
	a, err := pgstore.Open(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b, err := pgstore.Open(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	const key = 42
	la, ok, err := a.TryLeader(ctx, key)
	if err != nil || !ok {
		t.Fatalf("first leader: %v %v", ok, err)
	}
	if l, ok, err := b.TryLeader(ctx, key); err != nil || ok || l != nil {
		t.Fatalf("second leader while the first holds: %v %v", ok, err)
	}
	la.Release()
	la.Release() // twice is fine
	lb, ok, err := b.TryLeader(ctx, key)
	if err != nil || !ok {
		t.Fatalf("leader after release: %v %v", ok, err)
	}
	// The holder's connection killed by the server (a lost network, a
	// restarted pooler): Done closes, and the lock is free for another.
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, `SELECT pg_terminate_backend(pid) FROM pg_locks
		WHERE locktype = 'advisory' AND objid = $1 AND granted`, key); err != nil {
		t.Fatal(err)
	}
	select {
	case <-lb.Done():
	case <-time.After(time.Minute):
		t.Fatal("Done did not close after the connection died")
	}
	lb.Release()
	testenv.Eventually(t, "another session takes the lock", time.Minute, func() (bool, string) {
		l, ok, err := a.TryLeader(ctx, key)
		if ok {
			l.Release()
		}
		return ok, fmt.Sprintf("held elsewhere still (%v)", err)
	})
}
