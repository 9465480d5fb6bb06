package sqlite

import (
	"context"
	"testing"

	"watchdog/state"
	"watchdog/store"
)

// TestObservationRecordsExit: the exit status is stored with the death's
// observation, only over the lifecycle it judged, read back as it was
// written, and a new pid does not inherit the old one's.
func TestObservationRecordsExit(t *testing.T) {
	ctx := context.Background()
	s, _ := openTest(t)
	if _, err := s.Register(ctx, store.Entity{Type: "session", ID: "open", Lifecycle: strp("running"), PID: 4242}, "orchestrator", unixAt(1)); err != nil {
		t.Fatal(err)
	}
	get := func() store.Entity {
		t.Helper()
		e, err := s.Get(ctx, "session", "open")
		if err != nil {
			t.Fatal(err)
		}
		return e
	}
	cur := get()
	if cur.Exit != nil {
		t.Fatalf("a fresh entity has exit %+v, want none", cur.Exit)
	}
	seq := cur.LastSeq
	for _, tc := range []struct {
		name  string
		seq   int64
		x     *state.ExitStatus
		wrote bool
		want  *state.ExitStatus
	}{
		{"another lifecycle", seq + 1, &state.ExitStatus{Code: 3, At: unixAt(3)}, false, nil},
		{"exit 3", seq, &state.ExitStatus{Code: 3, At: unixAt(3)}, true, &state.ExitStatus{Code: 3, At: unixAt(3)}},
		{"same again", seq, &state.ExitStatus{Code: 3, At: unixAt(4)}, false, &state.ExitStatus{Code: 3, At: unixAt(3)}},
		{"none leaves it", seq, nil, false, &state.ExitStatus{Code: 3, At: unixAt(3)}},
		{"exit 0", seq, &state.ExitStatus{Code: 0, At: unixAt(5)}, true, &state.ExitStatus{Code: 0, At: unixAt(5)}},
		{"sigkill", seq, &state.ExitStatus{Signal: 9, At: unixAt(6)}, true, &state.ExitStatus{Signal: 9, At: unixAt(6)}},
	} {
		o := store.Observation{Health: state.HealthProcessDead, HealthSince: unixAt(2), DeadSince: unixAt(2), SeenSeq: tc.seq, At: unixAt(2), Exit: tc.x, PID: 4242}
		wrote, err := s.RecordObservation(ctx, "session", "open", o)
		if err != nil || wrote != tc.wrote {
			t.Errorf("%s: RecordObservation = %v, %v; want %v", tc.name, wrote, err, tc.wrote)
		}
		x := get().Exit
		switch {
		case tc.want == nil && x != nil:
			t.Errorf("%s: exit %+v, want none", tc.name, x)
		case tc.want != nil && (x == nil || x.Code != tc.want.Code || x.Signal != tc.want.Signal || !x.At.Equal(tc.want.At)):
			t.Errorf("%s: exit %+v, want %+v", tc.name, x, tc.want)
		}
	}

	// Re-registering the same pid keeps the status; a new pid clears it.
	if _, err := s.Register(ctx, store.Entity{Type: "session", ID: "open", PID: 4242}, "orchestrator", unixAt(7)); err != nil {
		t.Fatal(err)
	}
	if get().Exit == nil {
		t.Error("re-registering the same pid dropped its exit status")
	}
	if _, err := s.Register(ctx, store.Entity{Type: "session", ID: "open", PID: 5000}, "orchestrator", unixAt(8)); err != nil {
		t.Fatal(err)
	}
	if x := get().Exit; x != nil {
		t.Errorf("a new pid inherited the old one's exit %+v", x)
	}
}

// TestRunnerObservationIsNoJudgement: exec's own exit status is stored,
// but does not move when the host was last judged (LastObserved), which
// `status` shows as a daemon's work.
func TestRunnerObservationIsNoJudgement(t *testing.T) {
	ctx := context.Background()
	s, _ := openTest(t)
	e := store.Entity{Type: "session", ID: "x", Lifecycle: strp("running"), PID: 4242, HostID: "h1"}
	if _, err := s.Register(ctx, e, "orchestrator", unixAt(1)); err != nil {
		t.Fatal(err)
	}
	cur, _ := s.Get(ctx, "session", "x")
	judged := store.Observation{Health: state.HealthRunning, HealthSince: unixAt(2), SeenSeq: cur.LastSeq, At: unixAt(2)}
	runner := store.Observation{Health: state.HealthRunning, HealthSince: unixAt(2), SeenSeq: cur.LastSeq, At: unixAt(9),
		Exit: &state.ExitStatus{Code: 1, At: unixAt(9)}, PID: 4242, Runner: true}
	for _, o := range []store.Observation{judged, runner} {
		if wrote, err := s.RecordObservation(ctx, "session", "x", o); err != nil || !wrote {
			t.Fatalf("record %+v: %v %v", o, wrote, err)
		}
	}
	last, err := s.LastObserved(ctx)
	if err != nil || !last["h1"].Equal(unixAt(2)) {
		t.Errorf("last observed %v (%v), want the judgement's %v", last, err, unixAt(2))
	}
	if got, _ := s.Get(ctx, "session", "x"); got.Exit == nil || got.Exit.Code != 1 {
		t.Errorf("exit %+v, want code 1", got.Exit)
	}
}
