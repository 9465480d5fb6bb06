package postgres_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"watchdog/internal/testenv"
	"watchdog/state"
	"watchdog/store"
	"watchdog/store/postgres"
)

// TestTerminatedBackendsClassified: backends killed under writes in flight
// (pg_terminate_backend, the way a server restart or an operator ends
// them) make every failed write either "not written" (and then it is not
// in the store) or "outcome unknown"; never a fault, the API's 500. Every
// write that succeeded is in the store.
func TestTerminatedBackendsClassified(t *testing.T) {
	dsn := testenv.Postgres(t)
	ctx := context.Background()
	s, err := postgres.Open(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	killer, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer killer.Close(ctx)

	const workers, maxWrites, wantRefused = 8, 5000, 60
	var (
		written   atomic.Int64
		refused   atomic.Int64
		done      = make(chan struct{})
		mu        sync.Mutex
		outcomes  = map[string]store.Failure{} // id → how its write failed; absent: succeeded
		succeeded []string
		faults    []error
	)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for i := 0; ; i++ {
				if refused.Load() >= wantRefused || written.Load()+refused.Load() >= maxWrites {
					return
				}
				id := fmt.Sprintf("w%d-%d", w, i)
				running := "running"
				_, err := s.Register(ctx, store.Entity{Type: "session", ID: id, Lifecycle: &running, Health: state.HealthUnknown, Delivery: state.DeliveryNotExpected}, "orchestrator", time.Now())
				mu.Lock()
				switch f := store.Classify(err); {
				case err == nil:
					succeeded = append(succeeded, id)
					written.Add(1)
				case f == store.FailureFault:
					faults = append(faults, err)
				default:
					outcomes[id] = f
					if f == store.FailureNotWritten {
						refused.Add(1)
					}
				}
				mu.Unlock()
			}
		})
	}
	go func() {
		wg.Wait()
		close(done)
	}()
	kills := 0
	for running := true; running; {
		select {
		case <-done:
			running = false
		default:
			tag, err := killer.Exec(ctx, `SELECT pg_terminate_backend(pid) FROM pg_stat_activity
				WHERE datname = current_database() AND pid <> pg_backend_pid() AND backend_type = 'client backend'`)
			if err != nil {
				t.Fatalf("terminate backends: %v", err)
			}
			kills += int(tag.RowsAffected())
			time.Sleep(10 * time.Millisecond)
		}
	}
	for _, err := range faults {
		t.Errorf("a write failed as a fault (the API's 500) when its backend was terminated: %v", err)
	}
	unknown := 0
	for _, f := range outcomes {
		if f == store.FailureOutcomeUnknown {
			unknown++
		}
	}
	t.Logf("%d writes acknowledged, %d not written, %d outcome unknown, %d faults; %d terminate calls", len(succeeded), refused.Load(), unknown, len(faults), kills)
	if refused.Load() == 0 {
		t.Fatalf("no write was refused in %d: the terminations never hit one", len(succeeded))
	}

	check, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer check.Close(ctx)
	present := func(id string) bool {
		var n int
		if err := check.QueryRow(ctx, "SELECT COUNT(*) FROM entities WHERE type = 'session' AND id = $1", id).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n == 1
	}
	for _, id := range succeeded {
		if !present(id) {
			t.Errorf("%s was acknowledged but is not in the store", id)
		}
	}
	for id, f := range outcomes {
		if f == store.FailureNotWritten && present(id) {
			t.Errorf("%s was answered not written but is in the store", id)
		}
	}
}
