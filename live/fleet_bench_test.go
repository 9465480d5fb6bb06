package live

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"watchdog/attention"
	"watchdog/internal/testenv"
	"watchdog/store"
	"watchdog/wire"
)

// BenchmarkFleetRead is a fleet-wide read at 50,000 entities of 25
// hosts, one in fifty needing attention (as docs/bench.md's fleet part:
// mostly running and well), from a daemon that holds one host: the list's
// first page of 500 in the severity order and the queue, the way ADR-0056
// read them (a view of every host made for the read: For) and by index
// (ListPage, ForQueue: ADR-0058), side by side in one run. Read the
// ratios.
func BenchmarkFleetRead(b *testing.B) {
	st, cli := twoStores(b)
	ctx := context.Background()
	db := testenv.SQL(b, cli.Path())
	r := rand.New(rand.NewPCG(58, 3))
	const n = 50000
	tx, err := db.Begin()
	if err != nil {
		b.Fatal(err)
	}
	for i := range n {
		vals := row(r, i)
		if i%50 != 0 {
			// running and well: lifecycle, terminal, health, reasons,
			// transition, ended.
			copy(vals[2:8], []any{"running", 0, "running", "[]", nil, nil})
		}
		if _, err := tx.Exec(`INSERT INTO entities (type, id, label, lifecycle, terminal, health, delivery,
			reasons, transition_reason, ended_at, lifecycle_at, created_at, updated_at, host_id)
			VALUES (?, ?, '', ?, ?, ?, 'not_expected', ?, ?, ?, ?, ?, ?, ?)`, append(vals, fmt.Sprintf("h%d", i%25))...); err != nil {
			b.Fatal(err)
		}
	}
	if err := tx.Commit(); err != nil {
		b.Fatal(err)
	}
	v := New(st, nil, 0)
	v.SetHosts(func() store.Hosts { return store.Only("h0") })
	if err := v.Load(ctx); err != nil {
		b.Fatal(err)
	}
	now := testNow
	q := attention.Query{Limit: attention.DefaultLimit}
	// The first read derives every row the raw SQL left stale, once.
	if _, _, _, err := v.ListPage(ctx, "", true, store.ListQuery{Limit: 500}, now); err != nil {
		b.Fatal(err)
	}
	b.Run("list/view-per-read", func(b *testing.B) {
		for b.Loop() {
			o, err := v.For(ctx, "", true)
			if err != nil {
				b.Fatal(err)
			}
			var keys []wire.SeverityKey
			o.Each("", func(e *Entry) {
				keys = append(keys, wire.SeverityKeyOf(e.State, e.Entity.UpdatedAt, e.Entity.Type, e.Entity.ID))
			})
			slices.SortFunc(keys, func(a, b wire.SeverityKey) int {
				if a.Less(b) {
					return -1
				}
				return 1
			})
			if len(keys) != n {
				b.Fatalf("%d entities", len(keys))
			}
		}
	})
	b.Run("list/by-index", func(b *testing.B) {
		for b.Loop() {
			pg, total, ok, err := v.ListPage(ctx, "", true, store.ListQuery{Limit: 500}, now)
			if err != nil || !ok || total != n || len(pg) != 501 {
				b.Fatalf("%d of %d, %v %v", len(pg), total, ok, err)
			}
		}
	})
	b.Run("queue/view-per-read", func(b *testing.B) {
		for b.Loop() {
			o, err := v.For(ctx, "", true)
			if err != nil {
				b.Fatal(err)
			}
			if o.Attention(q, now).Total == 0 {
				b.Fatal("an empty queue")
			}
		}
	})
	b.Run("queue/by-index", func(b *testing.B) {
		for b.Loop() {
			o, err := v.ForQueue(ctx, "", true, now)
			if err != nil {
				b.Fatal(err)
			}
			if o.Attention(q, now).Total == 0 {
				b.Fatal("an empty queue")
			}
		}
	})
}
