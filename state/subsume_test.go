package state

import (
	"fmt"
	"testing"
)

func TestSubsumes(t *testing.T) {
	for _, c := range []struct {
		transition, finding ReasonCode
		want                bool
	}{
		{RunFailedArtifactContract, RunDeliveryInvalid, true},
		{RunFailedArtifactContract, RunDeliveryMissing, true},
		{RunFailedArtifactContract, RunDeliveryPartial, true},
		{RunFailedArtifactContract, RunDeliveryCheckStopped, true},
		{"workflow.failed.artifact_contract", RunDeliveryInvalid, true},
		{RunFailedArtifactContract, RunHealthOrphaned, false},
		{RunFailedArtifactContract, RunHealthStaleLock, false},
		{SystemReaperPhantomOrphaned, RunHealthOrphaned, true},
		{SystemReaperPhantomOrphaned, TeamHealthOrphaned, true},
		{SystemReaperPhantomOrphaned, RunHealthProcessDead, false},
		{SystemReaperPhantomOrphaned, RunDeliveryMissing, false},
		{SystemReaperPhantomProcessDead, RunHealthProcessDead, true},
		{SystemReaperPhantomProcessDead, RunHealthPIDReused, true},
		{SystemReaperPhantomProcessDead, RunHealthHostRebooted, true},
		{SystemReaperPhantomProcessDead, RunHealthOrphaned, false},
		{SystemReaperPhantomProcessDead, RunDeliveryMissing, false},
		{SystemHealthProcessDeadNoTerminal, RunHealthProcessDead, true},
		{SystemHealthProcessDeadNoTerminal, RunHealthStaleLock, false},
		{RunFailedExitNonzero, RunDeliveryMissing, false},
		{RunFailedExitNonzero, RunHealthProcessDead, false},
		{"", RunDeliveryMissing, false},
		{RunFailedArtifactContract, "malformed", false},
	} {
		t.Run(fmt.Sprintf("%s⊃%s", c.transition, c.finding), func(t *testing.T) {
			if got := Subsumes(c.transition, c.finding); got != c.want {
				t.Fatalf("Subsumes(%s, %s) = %v, want %v", c.transition, c.finding, got, c.want)
			}
		})
	}
}

func TestUnsubsumed(t *testing.T) {
	findings := []StateReason{{Code: RunHealthStaleLock}, {Code: RunDeliveryInvalid}, {Code: RunHealthOrphaned}, {Code: RunDeliveryPartial}}
	for _, c := range []struct {
		transition ReasonCode
		want       []ReasonCode
	}{
		{RunFailedArtifactContract, []ReasonCode{RunHealthStaleLock, RunHealthOrphaned}},
		{SystemReaperPhantomOrphaned, []ReasonCode{RunHealthStaleLock, RunDeliveryInvalid, RunDeliveryPartial}},
		{RunFailedExitNonzero, []ReasonCode{RunHealthStaleLock, RunDeliveryInvalid, RunHealthOrphaned, RunDeliveryPartial}},
	} {
		var got []ReasonCode
		for _, r := range Unsubsumed(c.transition, findings) {
			got = append(got, r.Code)
		}
		if fmt.Sprint(got) != fmt.Sprint(c.want) {
			t.Errorf("Unsubsumed(%s) = %v, want %v", c.transition, got, c.want)
		}
	}
	if len(findings) != 4 || findings[1].Code != RunDeliveryInvalid {
		t.Fatalf("Unsubsumed changed its argument: %v", findings)
	}
}
