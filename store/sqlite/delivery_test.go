package sqlite

import (
	"context"
	"fmt"
	"testing"

	"watchdog/state"
	"watchdog/store"
)

// TestTransitionAnswersTheUnownedFlag: the flag asking the operator to
// record an end for a dead process is gone with the transition that
// records one, in the same write, while the other findings stay.
func TestTransitionAnswersTheUnownedFlag(t *testing.T) {
	ctx := context.Background()
	s, _ := openTest(t)
	if _, err := s.Register(ctx, store.Entity{Type: "play", ID: "p", Lifecycle: strp("running"), PID: 4242}, "orchestrator", unixAt(1)); err != nil {
		t.Fatal(err)
	}
	reg, err := s.Get(ctx, "play", "p")
	if err != nil {
		t.Fatal(err)
	}
	flag := state.StateReason{Code: state.SystemHealthProcessDeadUnowned, Message: "a play has no end for a dead process"}
	lock := state.StateReason{Code: state.RunHealthStaleLock, Message: "lock left"}
	if _, err := s.RecordObservation(ctx, "play", "p", store.Observation{Health: state.HealthProcessDead, Delivery: state.DeliveryNotExpected,
		Reasons: []state.StateReason{flag, lock}, SeenSeq: reg.LastSeq, At: unixAt(2)}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.ApplyTransition(ctx, "play", "p", func(store.Entity) (store.Change, error) {
		return store.Change{To: "failed", Terminal: true, Actor: "admin", At: unixAt(3)}, nil
	}); err != nil {
		t.Fatal(err)
	}
	e, err := s.Get(ctx, "play", "p")
	if err != nil {
		t.Fatal(err)
	}
	var codes []state.ReasonCode
	for _, r := range e.Reasons {
		codes = append(codes, r.Code)
	}
	if fmt.Sprint(codes) != fmt.Sprint([]state.ReasonCode{state.RunHealthStaleLock}) {
		t.Fatalf("findings after the end: %v, want the stale lock alone", codes)
	}
}
