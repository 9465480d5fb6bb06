package sqlite

import (
	"context"
	"testing"

	"watchdog/state"
	"watchdog/store"
)

// TestRecordExit: the exit status is stored only on the open entity whose
// pid still matches, read back as it was written, and a new pid does not
// inherit the old one's.
func TestRecordExit(t *testing.T) {
	ctx := context.Background()
	s, _ := openTest(t)
	for _, id := range []string{"open", "ended"} {
		if _, err := s.Register(ctx, store.Entity{Type: "session", ID: id, Lifecycle: strp("running"), PID: 4242}, "orchestrator", unixAt(1)); err != nil {
			t.Fatal(err)
		}
	}
	if _, _, err := s.ApplyTransition(ctx, "session", "ended", func(store.Entity) (store.Change, error) {
		return store.Change{To: "completed", Terminal: true, Actor: "orchestrator", At: unixAt(2)}, nil
	}); err != nil {
		t.Fatal(err)
	}
	got := func(id string) *state.ExitStatus {
		t.Helper()
		e, err := s.Get(ctx, "session", id)
		if err != nil {
			t.Fatal(err)
		}
		return e.Exit
	}
	if x := got("open"); x != nil {
		t.Fatalf("a fresh entity has exit %+v, want none", x)
	}

	for _, tc := range []struct {
		name  string
		id    string
		pid   int
		x     state.ExitStatus
		wrote bool
		want  *state.ExitStatus
	}{
		{"another pid", "open", 4243, state.ExitStatus{Code: 3, At: unixAt(3)}, false, nil},
		{"ended entity", "ended", 4242, state.ExitStatus{Code: 3, At: unixAt(3)}, false, nil},
		{"exit 3", "open", 4242, state.ExitStatus{Code: 3, At: unixAt(3)}, true, &state.ExitStatus{Code: 3, At: unixAt(3)}},
		{"same again", "open", 4242, state.ExitStatus{Code: 3, At: unixAt(4)}, false, &state.ExitStatus{Code: 3, At: unixAt(3)}},
		{"exit 0", "open", 4242, state.ExitStatus{Code: 0, At: unixAt(5)}, true, &state.ExitStatus{Code: 0, At: unixAt(5)}},
		{"sigkill", "open", 4242, state.ExitStatus{Signal: 9, At: unixAt(6)}, true, &state.ExitStatus{Signal: 9, At: unixAt(6)}},
	} {
		wrote, err := s.RecordExit(ctx, "session", tc.id, tc.pid, tc.x)
		if err != nil || wrote != tc.wrote {
			t.Errorf("%s: RecordExit = %v, %v; want %v", tc.name, wrote, err, tc.wrote)
		}
		x := got(tc.id)
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
	if got("open") == nil {
		t.Error("re-registering the same pid dropped its exit status")
	}
	if _, err := s.Register(ctx, store.Entity{Type: "session", ID: "open", PID: 5000}, "orchestrator", unixAt(8)); err != nil {
		t.Fatal(err)
	}
	if x := got("open"); x != nil {
		t.Errorf("a new pid inherited the old one's exit %+v", x)
	}
}

func TestRecordExitRejectsBadInput(t *testing.T) {
	s, _ := openTest(t)
	for _, tc := range []struct {
		name string
		pid  int
		x    state.ExitStatus
	}{
		{"no pid", 0, state.ExitStatus{At: unixAt(1)}},
		{"no time", 4242, state.ExitStatus{Code: 1}},
	} {
		if _, err := s.RecordExit(context.Background(), "session", "s", tc.pid, tc.x); err == nil {
			t.Errorf("%s: no error", tc.name)
		}
	}
}
