package postgres_test

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"watchdog/internal/testenv"
	"watchdog/live"
	"watchdog/store"
	"watchdog/store/postgres"
)

// BenchmarkFleetList: the fleet-wide list's first page of 500 in the
// severity order, read by index (live.View.ListPage, ADR-0058) from a
// view that holds one host of 20, over 50,000 entities on PostgreSQL
// (one in fifty failed, the rest running): the read docs/bench.md's fleet
// table times over HTTP, without the HTTP. Run the same file on two
// commits side by side for a ratio. The rows were just written, as in a
// busy fleet, so the count visits the heap (no visibility map yet); the
// "vacuumed" run is after a VACUUM, the count's best case.
func BenchmarkFleetList(b *testing.B) {
	ctx := context.Background()
	dsn := testenv.Postgres(b)
	st, err := postgres.Open(ctx, dsn)
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		b.Fatal(err)
	}
	defer conn.Close(ctx)
	const n = 50000
	now := time.Unix(1_800_000_000, 0)
	at := float64(now.Unix())
	if _, err := conn.Exec(ctx, `INSERT INTO entities (type, id, lifecycle, terminal, health, delivery, transition_reason, host_id,
		created_at, updated_at, lifecycle_at, ended_at)
		SELECT 'session', 's' || i, CASE WHEN i % 50 = 0 THEN 'failed' ELSE 'running' END, i % 50 = 0, 'unknown', 'not_expected',
			CASE WHEN i % 50 = 0 THEN $1 END, 'h' || (i % 20), $2 - i, $2 - i, $2 - i, CASE WHEN i % 50 = 0 THEN $2 - i END
		FROM generate_series(1, $3) AS i`,
		`{"code":"run.failed.exit_nonzero","message":"exit 3","claim_status":"observed","confidence":1,"evidence":[]}`, at, n); err != nil {
		b.Fatal(err)
	}
	v := live.New(st, func() time.Time { return now }, 0)
	v.SetHosts(func() store.Hosts { return store.Only("h0") })
	if err := v.Load(ctx); err != nil {
		b.Fatal(err)
	}
	// The raw SQL left every row stale: the first read derives them.
	if _, err := v.FillColumns(ctx); err != nil {
		b.Fatal(err)
	}
	read := func(b *testing.B) {
		for b.Loop() {
			res, ok, err := v.ListPage(ctx, "", true, store.ListQuery{Limit: 500}, now)
			if err != nil || !ok || res.Total != n || len(res.Entries) != 501 {
				b.Fatalf("%d of %d, %v %v", len(res.Entries), res.Total, ok, err)
			}
		}
	}
	b.Run("fresh", read)
	if _, err := conn.Exec(ctx, "VACUUM entities"); err != nil {
		b.Fatal(err)
	}
	b.Run("vacuumed", read)
}
