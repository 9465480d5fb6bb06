package rowcodec

import (
	"fmt"
	"testing"
	"time"

	"watchdog/state"
	"watchdog/store"
)

// TestWithDelivery: a verdict recorded with an end replaces the stored
// delivery findings and keeps the others.
func TestWithDelivery(t *testing.T) {
	r := func(c state.ReasonCode) state.StateReason { return state.StateReason{Code: c} }
	tests := []struct {
		name   string
		stored []state.StateReason
		d      store.DeliveryRecord
		want   string
	}{
		{"none stored", nil, store.DeliveryRecord{Reasons: []state.StateReason{r(state.RunDeliveryMissing)}}, "[run.delivery.missing]"},
		{"health kept, delivery replaced", []state.StateReason{r(state.RunHealthStaleLock), r(state.RunDeliveryPartial)},
			store.DeliveryRecord{Reasons: []state.StateReason{r(state.RunDeliveryInvalid)}}, "[run.health.stale_lock run.delivery.invalid]"},
		{"passed clears the findings", []state.StateReason{r(state.RunDeliveryPartial)}, store.DeliveryRecord{Delivery: state.DeliveryPassed}, "[]"},
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
