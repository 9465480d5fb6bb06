package postgres_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"watchdog/internal/testenv"
	"watchdog/store"
	"watchdog/store/postgres"
)

// TestNotificationsWakeOnlyTheHostsHeld: each commit's notification names
// the hosts it wrote, and a store narrowed by WakeFor moves its version
// only for those it selects, or for a notification that names none (a
// dismissal). The notifications of one writer reach every listener in the
// order they were sent, so a listener that has moved for a later one has
// heard (and skipped, or not) every earlier one: the counts are exact,
// with no waiting for something not to happen.
func TestNotificationsWakeOnlyTheHostsHeld(t *testing.T) {
	dsn := testenv.Postgres(t)
	ctx := context.Background()
	open := func() *postgres.Store {
		s, err := postgres.Open(ctx, dsn)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	}
	writer, witness, follower, leader := open(), open(), open(), open()
	follower.WakeFor(store.Only("a"))
	leader.WakeFor(store.AllBut("a"))
	f0, l0 := follower.Woken(), leader.Woken()
	seen := witness.Woken()
	// step writes once through writer and waits until the witness (which
	// wakes for every host) has heard it, so each step is a notification
	// of its own.
	step := func(what string, write func() error) {
		t.Helper()
		if err := write(); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		testenv.Eventually(t, "the witness hears "+what, time.Minute, func() (bool, string) {
			w := witness.Woken()
			return w > seen, fmt.Sprintf("witness at %d", w)
		})
		seen = witness.Woken()
	}
	reg := func(host, id string) func() error {
		return func() error {
			running := "running"
			_, err := writer.Register(ctx, store.Entity{Type: "session", ID: id, HostID: host, Lifecycle: &running}, "orchestrator", time.Unix(100, 0))
			return err
		}
	}
	step("a commit on host b", reg("b", "b-1"))
	step("a commit on host a", reg("a", "a-1"))
	step("a heartbeat on host a", func() error { return writer.RecordHeartbeat(ctx, "session", "a-1", time.Unix(101, 0), "half") })
	step("a host-less commit", reg("", "n-1"))
	step("a dismissal", func() error {
		return writer.UpsertDismissal(ctx, store.Dismissal{Fingerprint: "session:b-1:x", EntityType: "session", EntityID: "b-1", ReasonCode: "x",
			StatusAtDismissal: "running", DismissedAt: time.Unix(100, 0)})
	})
	// The dismissal wakes both, and it came last: once each has moved for
	// it, each has heard everything before it.
	wait := func(name string, s *postgres.Store, want int64) {
		t.Helper()
		testenv.Eventually(t, name+" hears the dismissal", time.Minute, func() (bool, string) {
			return s.Woken() >= want, fmt.Sprintf("woken %d times, want %d", s.Woken(), want)
		})
		if got := s.Woken(); got != want {
			t.Errorf("%s woken %d times, want %d", name, got, want)
		}
	}
	wait("the follower of host a (a's commit and heartbeat, the dismissal)", follower, f0+3)
	wait("the leader of every host but a (b's commit, the host-less one, the dismissal)", leader, l0+3)
}
