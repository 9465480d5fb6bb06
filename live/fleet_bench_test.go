package live

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"watchdog/attention"
	"watchdog/internal/testenv"
	"watchdog/state"
	"watchdog/store"
	"watchdog/transitions"
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
	// The first read derives every row the raw SQL left stale, once: an
	// upgraded database's first fleet-wide read.
	start := time.Now()
	if _, _, err := v.ListPage(ctx, "", true, store.ListQuery{Limit: 500}, now); err != nil {
		b.Fatal(err)
	}
	b.Logf("the first read, deriving %d stale rows: %v", n, time.Since(start))
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
			res, ok, err := v.ListPage(ctx, "", true, store.ListQuery{Limit: 500}, now)
			pg, total := res.Entries, res.Total
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

// BenchmarkWriteColumns is what writing the derived columns adds to the
// write path on SQLite: a registration, a transition and an observation
// of a new entity, with the derivation registered (the daemon's and the
// CLI's case) and without (the rows left stale), side by side.
func BenchmarkWriteColumns(b *testing.B) {
	for _, on := range []bool{false, true} {
		name := "without"
		if on {
			name = "with"
		}
		b.Run(name, func(b *testing.B) {
			if !on {
				store.SetDerivation(nil)
				defer store.SetDerivation(Columns)
			}
			_, cli := twoStores(b)
			ctx := context.Background()
			clock := testenv.NewClock(testNow)
			w := &transitions.Writer{Store: cli, Now: clock.Now}
			running := "running"
			i := 0
			for b.Loop() {
				id := fmt.Sprintf("w%07d", i)
				i++
				if _, err := w.Register(ctx, transitions.Registration{
					Entity: store.Entity{Type: "session", ID: id, HostID: "h1", Lifecycle: &running}, Actor: transitions.ActorOrchestrator,
				}); err != nil {
					b.Fatal(err)
				}
				e, err := cli.Get(ctx, "session", id)
				if err != nil {
					b.Fatal(err)
				}
				if _, err := cli.RecordObservation(ctx, "session", id, store.Observation{Health: state.HealthStalled, Delivery: state.DeliveryNotExpected,
					Reasons: []state.StateReason{{Code: state.RunHealthStalled, Message: "no heartbeat"}}, HealthSince: clock.Now(), At: clock.Now(), SeenSeq: e.LastSeq}); err != nil {
					b.Fatal(err)
				}
				if _, err := w.Transition(ctx, transitions.Request{Type: "session", ID: id, To: "failed", Actor: transitions.ActorOrchestrator,
					Reason: &state.StateReason{Code: state.RunFailedExitNonzero}}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
