package postgres_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"watchdog/internal/testenv"
	"watchdog/state"
	"watchdog/store"
	"watchdog/store/postgres"
)

// BenchmarkTransitionsParallel: 8 writers, each moving its own sessions
// back and forth between running and blocked through the store's write
// path, with the change feed read beside them as a daemon's view reads it
// (DataVersion, then the batches): transitions per second of wall time,
// and the same with one writer, so the ratio says what concurrency buys
// (ADR-0053; under the feed lock, 1.24).
func BenchmarkTransitionsParallel(b *testing.B) {
	for _, writers := range []int{1, 8} {
		b.Run(fmt.Sprintf("writers=%d", writers), func(b *testing.B) {
			dsn := testenv.Postgres(b)
			ctx := context.Background()
			s, err := postgres.Open(ctx, dsn)
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			running := "running"
			for w := range writers {
				if _, err := s.Register(ctx, store.Entity{Type: "session", ID: fmt.Sprintf("s%d", w), Lifecycle: &running}, "orchestrator", time.Now()); err != nil {
					b.Fatal(err)
				}
			}
			stop := make(chan struct{})
			var feed sync.WaitGroup
			feed.Go(func() {
				var c store.Cursor
				for {
					select {
					case <-stop:
						return
					case <-s.Changes():
					}
					if _, err := s.DataVersion(ctx); err != nil {
						return
					}
					for {
						bt, err := s.ChangesSince(ctx, c, 2000)
						if err != nil {
							return
						}
						c = bt.Next
						if !bt.More {
							break
						}
					}
				}
			})
			var next atomic.Int64
			b.ResetTimer()
			start := time.Now()
			var wg sync.WaitGroup
			for w := range writers {
				wg.Go(func() {
					id := fmt.Sprintf("s%d", w)
					for next.Add(1) <= int64(b.N) {
						_, _, err := s.ApplyTransition(ctx, "session", id, func(cur store.Entity) (store.Change, error) {
							to := "blocked"
							if cur.LifecycleOr("") == "blocked" {
								to = "running"
							}
							r := state.Observed(state.SystemHealthProcessDeadNoTerminal, "bench")
							return store.Change{To: to, Actor: "reaper", Reason: &r, At: time.Now()}, nil
						})
						if err != nil {
							b.Error(err)
							return
						}
					}
				})
			}
			wg.Wait()
			b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "transitions/s")
			b.StopTimer()
			close(stop)
			feed.Wait()
		})
	}
}
