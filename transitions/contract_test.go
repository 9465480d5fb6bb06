package transitions

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"watchdog/state"
	"watchdog/store"
)

// stubContracts stands in for the probe's artifact check (reaper.Contracts,
// tested against real files in reaper and end to end): it returns one
// verdict and counts its calls.
type stubContracts struct {
	v     Verdict
	ok    bool
	calls int
}

func (s *stubContracts) Judge(context.Context, store.Entity, time.Time) (Verdict, bool) {
	s.calls++
	return s.v, s.ok
}

// TestContractJudgedAtTheEnd (issue 14, observation 3): every terminal
// transition of an entity with a contract records the verdict with its
// end; a workflow completes only when the verdict passes; nothing is
// judged for a move that does not end the entity.
func TestContractJudgedAtTheEnd(t *testing.T) {
	missing := Verdict{Delivery: state.DeliveryMissing, Failing: []string{"a.txt: not present"},
		Reasons: []state.StateReason{state.Observed(state.RunDeliveryMissing, "the required artifact is not present")}}
	passed := Verdict{Delivery: state.DeliveryPassed}
	tests := []struct {
		name         string
		typ, to      string
		reason       *state.StateReason
		v            Verdict
		ok           bool
		wantErr      error
		wantDelivery state.Delivery
	}{
		{"workflow completed, contract fails", "workflow", "completed", nil, missing, true, ErrInvalidTransition, state.DeliveryUnknown},
		{"workflow completed, contract passes", "workflow", "completed", nil, passed, true, nil, state.DeliveryPassed},
		{"workflow failed records its delivery", "workflow", "failed", reason(state.RunFailedArtifactContract), missing, true, nil, state.DeliveryMissing},
		{"workflow partial records its delivery", "workflow", "partial", reason(state.RunDeliveryPartial), Verdict{Delivery: state.DeliveryPartial}, true, nil, state.DeliveryPartial},
		{"session completed, not guarded, true delivery", "session", "completed", nil, missing, true, nil, state.DeliveryMissing},
		{"workflow not judged here (another host)", "workflow", "completed", nil, missing, false, nil, state.DeliveryUnknown},
		{"workflow held is no end", "workflow", "held", nil, missing, true, nil, state.DeliveryUnknown},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w, st, _, _ := newTestWriter(t)
			judge := &stubContracts{v: tt.v, ok: tt.ok}
			w.Contracts = judge
			ctx := context.Background()
			running := "running"
			e := store.Entity{Type: tt.typ, ID: "x", Lifecycle: &running, ArtifactsRoot: "/r", Artifacts: []state.ArtifactSpec{{Path: "a.txt", Required: true}}}
			if _, err := w.Register(ctx, Registration{Entity: e, Actor: ActorOrchestrator}); err != nil {
				t.Fatal(err)
			}
			before := take(t, st, tt.typ, "x")
			_, err := w.Transition(ctx, Request{Type: tt.typ, ID: "x", To: tt.to, Reason: tt.reason, Actor: ActorOrchestrator})
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("err %v, want %v", err, tt.wantErr)
			}
			got, _ := st.Get(ctx, tt.typ, "x")
			if err != nil {
				if !strings.Contains(err.Error(), "a.txt") {
					t.Errorf("refusal %q does not name the failing artifact", err)
				}
				if after := take(t, st, tt.typ, "x"); len(after.rows) != len(before.rows) || got.LifecycleOr("") != "running" {
					t.Errorf("a refusal changed the entity: %s, %d audit rows (was %d)", got.LifecycleOr(""), len(after.rows), len(before.rows))
				}
			}
			if got.Delivery != tt.wantDelivery {
				t.Errorf("delivery %s, want %s", got.Delivery, tt.wantDelivery)
			}
			if tt.wantDelivery == state.DeliveryMissing && (len(got.Reasons) != 1 || got.Reasons[0].Code != state.RunDeliveryMissing) {
				t.Errorf("reasons %+v, want the delivery finding", got.Reasons)
			}
			if wantCalls := map[bool]int{true: 1, false: 0}[tt.to != "held"]; judge.calls != wantCalls {
				t.Errorf("judged %d times, want %d", judge.calls, wantCalls)
			}
		})
	}
}
