package api

import (
	"context"
	"testing"

	"watchdog/internal/testenv"
	"watchdog/store"
	"watchdog/transitions"
)

// TestTransitionCarriesExitStatus: a transition's exit_status is the
// entity's exit status after it (exec sends its child's; issue 39), and
// one out of range is refused with nothing changed.
func TestTransitionCarriesExitStatus(t *testing.T) {
	e := newEnv(t)
	sleep := testenv.Sleep(t)
	running := "running"
	for _, id := range []string{"s-exit", "s-bad"} {
		ent := store.Entity{Type: "session", ID: id, Lifecycle: &running, PID: sleep.Process.Pid}
		if _, err := e.w.Register(context.Background(), transitions.Registration{Entity: ent, Actor: transitions.ActorOrchestrator}); err != nil {
			t.Fatal(err)
		}
	}
	before := e.snapshot()
	if r := e.do("POST", "/api/v1/entities/session/s-bad/transitions", `{"to":"failed","reason":{"code":"run.failed.exit_nonzero"},"exit_status":{"code":300}}`); r.status != 400 {
		t.Errorf("exit code 300: %d %s, want 400", r.status, r.body)
	}
	e.assertUnchanged(before, "an exit code out of range")
	r := e.do("POST", "/api/v1/entities/session/s-exit/transitions", `{"to":"failed","reason":{"code":"run.failed.exit_nonzero"},"exit_status":{"code":3}}`)
	if r.status != 200 {
		t.Fatalf("transition with exit_status: %d %s", r.status, r.body)
	}
	got, err := e.st.Get(context.Background(), "session", "s-exit")
	if err != nil {
		t.Fatal(err)
	}
	if got.Exit == nil || got.Exit.Code != 3 || got.Exit.Killed() || got.Exit.At.IsZero() {
		t.Errorf("exit status %+v, want code 3 with a time", got.Exit)
	}
}
