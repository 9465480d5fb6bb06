package store

import (
	"context"
	"fmt"
	"testing"
	"time"

	"watchdog/state"
)

// TestWithDelivery: a verdict recorded with an end replaces the stored
// delivery findings and keeps the others.
func TestWithDelivery(t *testing.T) {
	r := func(c state.ReasonCode) state.StateReason { return state.StateReason{Code: c} }
	tests := []struct {
		name   string
		stored []state.StateReason
		d      DeliveryRecord
		want   string
	}{
		{"none stored", nil, DeliveryRecord{Reasons: []state.StateReason{r(state.RunDeliveryMissing)}}, "[run.delivery.missing]"},
		{"health kept, delivery replaced", []state.StateReason{r(state.RunHealthStaleLock), r(state.RunDeliveryPartial)},
			DeliveryRecord{Reasons: []state.StateReason{r(state.RunDeliveryInvalid)}}, "[run.health.stale_lock run.delivery.invalid]"},
		{"passed clears the findings", []state.StateReason{r(state.RunDeliveryPartial)}, DeliveryRecord{Delivery: state.DeliveryPassed}, "[]"},
	}
	for _, tt := range tests {
		var codes []state.ReasonCode
		for _, x := range withDelivery(tt.stored, &tt.d, time.Unix(1, 0)) {
			codes = append(codes, x.Code)
		}
		if got := fmt.Sprint(codes); got != tt.want {
			t.Errorf("%s: %s, want %s", tt.name, got, tt.want)
		}
	}
}

// TestTransitionAnswersTheUnownedFlag: the flag asking the operator to
// record an end for a dead process is gone with the transition that
// records one, in the same write, while the other findings stay.
func TestTransitionAnswersTheUnownedFlag(t *testing.T) {
	ctx := context.Background()
	s, _ := openTest(t)
	if _, err := s.Register(ctx, Entity{Type: "play", ID: "p", Lifecycle: strp("running"), PID: 4242}, "orchestrator", unixAt(1)); err != nil {
		t.Fatal(err)
	}
	reg, err := s.Get(ctx, "play", "p")
	if err != nil {
		t.Fatal(err)
	}
	flag := state.StateReason{Code: state.SystemHealthProcessDeadUnowned, Message: "a play has no end for a dead process"}
	lock := state.StateReason{Code: state.RunHealthStaleLock, Message: "lock left"}
	if _, err := s.RecordObservation(ctx, "play", "p", Observation{Health: state.HealthProcessDead, Delivery: state.DeliveryNotExpected,
		Reasons: []state.StateReason{flag, lock}, SeenSeq: reg.LastSeq, At: unixAt(2)}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.ApplyTransition(ctx, "play", "p", func(Entity) (Change, error) {
		return Change{To: "failed", Terminal: true, Actor: "admin", At: unixAt(3)}, nil
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
