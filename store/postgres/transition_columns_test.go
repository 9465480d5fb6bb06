package postgres_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"watchdog/internal/unixtime"
	"watchdog/live"
	"watchdog/state"
	"watchdog/store"
	"watchdog/transitions"
)

// TestTransitionWritesItsColumns: a transition writes its row's derived
// columns in its own statement (migration 0008, ADR-0059), derived before
// the write from the row the write will leave, and they are what
// live.Columns derives from the row read back, for every kind of move: a
// start, an end with a reason, a timeout with its durations, an end that
// answers findings (reasons replaced), a move out of a dead process's
// state (dead_since cleared). None had to be written again.
func TestTransitionWritesItsColumns(t *testing.T) {
	ctx := context.Background()
	st, w, clock, dsn := writerOn(t, time.Unix(1_800_000_000, 123_456_789))
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)

	pending := "pending"
	register := func(t *testing.T, id string) {
		t.Helper()
		if _, err := w.Register(ctx, transitions.Registration{
			Entity: store.Entity{Type: "session", ID: id, HostID: "h1", Lifecycle: &pending, Timeout: 90 * time.Second}, Actor: transitions.ActorOrchestrator,
		}); err != nil {
			t.Fatal(err)
		}
	}
	move := func(t *testing.T, id, to string, r *state.StateReason, elapsed time.Duration) {
		t.Helper()
		clock.Advance(1500 * time.Millisecond)
		if _, err := w.Transition(ctx, transitions.Request{Type: "session", ID: id, To: to, Reason: r, Actor: transitions.ActorOrchestrator, Elapsed: elapsed}); err != nil {
			t.Fatal(err)
		}
	}
	observe := func(t *testing.T, id string, o store.Observation) {
		t.Helper()
		e, err := st.Get(ctx, "session", id)
		if err != nil {
			t.Fatal(err)
		}
		o.SeenSeq, o.At = e.LastSeq, clock.Now()
		if _, err := st.RecordObservation(ctx, "session", id, o); err != nil {
			t.Fatal(err)
		}
	}
	stalled := store.Observation{Health: state.HealthStalled, Delivery: state.DeliveryNotExpected,
		Reasons: []state.StateReason{{Code: state.RunHealthStalled, Message: "no heartbeat"}}}
	dead := store.Observation{Health: state.HealthProcessDead, Delivery: state.DeliveryNotExpected,
		Reasons: []state.StateReason{{Code: state.RunHealthStalled, Message: "gone"}}}

	for _, c := range []struct {
		name  string
		steps func(t *testing.T, id string)
	}{
		{"start", func(t *testing.T, id string) { move(t, id, "running", nil, 0) }},
		{"fail with a reason", func(t *testing.T, id string) {
			move(t, id, "running", nil, 0)
			move(t, id, "failed", &state.StateReason{Code: state.RunFailedExitNonzero, Message: "exit 3"}, 0)
		}},
		{"time out", func(t *testing.T, id string) {
			move(t, id, "running", nil, 0)
			move(t, id, "timed_out", &state.StateReason{Code: state.RunTimedOutDeadline}, 95*time.Second+333*time.Microsecond)
		}},
		{"end over findings", func(t *testing.T, id string) {
			move(t, id, "running", nil, 0)
			observe(t, id, stalled)
			move(t, id, "cancelled", &state.StateReason{Code: state.RunCancelledOperator}, 0)
		}},
		{"run on after a death was seen", func(t *testing.T, id string) {
			observe(t, id, func() store.Observation { o := dead; o.DeadSince = clock.Now(); return o }())
			move(t, id, "running", nil, 0)
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			id := "s-" + strings.ReplaceAll(c.name, " ", "-")
			register(t, id)
			c.steps(t, id)
			e, err := st.Get(ctx, "session", id)
			if err != nil {
				t.Fatal(err)
			}
			want := live.Columns(e)
			var (
				rank, items int
				severity    string
				expires     *float64
				derivedRev  *int64
			)
			if err := conn.QueryRow(ctx, "SELECT sev_rank, severity, queue_items, queue_expires, derived_rev FROM entities WHERE type = 'session' AND id = $1", id).
				Scan(&rank, &severity, &items, &expires, &derivedRev); err != nil {
				t.Fatal(err)
			}
			var gotExpires time.Time
			if expires != nil {
				gotExpires = unixtime.FromSeconds(*expires)
			}
			if derivedRev == nil || *derivedRev != e.Revision || rank != want.Rank || severity != string(want.Severity) || items != want.Items || !gotExpires.Equal(want.Expires) {
				t.Errorf("stored columns rank %d severity %q items %d expires %v derived_rev %v (revision %d); live.Columns: %+v",
					rank, severity, items, gotExpires, derivedRev, e.Revision, want)
			}
		})
	}
	if n := st.ColumnFixes(); n != 0 {
		t.Errorf("%d transitions' columns were written again: rowcodec's Applied drifted from migration 0008", n)
	}

	// Columns found wrong after the call are not written again at a
	// revision a heartbeat may have left: the row is marked stale, even
	// when the request that wrote it was cancelled, and a reader by index
	// derives it.
	register(t, "s-drifted")
	move(t, "s-drifted", "running", nil, 0)
	gone, cancel := context.WithCancel(ctx)
	cancel()
	st.Rederive(gone, "session", "s-drifted")
	var stale bool
	if err := conn.QueryRow(ctx, "SELECT derived_rev IS DISTINCT FROM revision FROM entities WHERE type = 'session' AND id = 's-drifted'").Scan(&stale); err != nil {
		t.Fatal(err)
	}
	if !stale {
		t.Error("a row whose columns were found wrong is not marked stale")
	}
	rows, err := st.StaleDerived(ctx, store.AllHosts(), 10)
	if err != nil || len(rows) != 1 || rows[0].ID != "s-drifted" {
		t.Errorf("StaleDerived: %d rows (%v), want s-drifted alone", len(rows), err)
	}
}
