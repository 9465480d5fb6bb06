package probe

import (
	"testing"

	"watchdog/state"
)

// The queue line of a delivery finding names the artifacts at fault, as
// the chain names a contract's one ("No report.md produced").
func TestDeliveryMessageNamesTheArtifacts(t *testing.T) {
	check := func(path string, required bool, st ArtifactStatus) ArtifactCheck {
		return ArtifactCheck{Spec: state.ArtifactSpec{Path: path, Required: required}, Status: st}
	}
	tests := []struct {
		checks []ArtifactCheck
		d      state.Delivery
		want   string
	}{
		{[]ArtifactCheck{check("report.md", true, ArtifactMissing)}, state.DeliveryMissing, "the required artifact report.md is not present"},
		{[]ArtifactCheck{check("a.md", true, ArtifactMissing), check("b.md", true, ArtifactMissing)}, state.DeliveryMissing, "none of the 2 required artifacts is present (a.md, b.md)"},
		{[]ArtifactCheck{check("a.md", true, ArtifactValid), check("b.md", true, ArtifactMissing)}, state.DeliveryPartial, "1 of 2 required artifacts valid; not present: b.md"},
		{[]ArtifactCheck{check("out.json", true, ArtifactInvalid)}, state.DeliveryInvalid, "1 artifact(s) present but invalid (out.json)"},
		{[]ArtifactCheck{check("1", true, ArtifactMissing), check("2", true, ArtifactMissing), check("3", true, ArtifactMissing), check("4", true, ArtifactMissing)},
			state.DeliveryMissing, "none of the 4 required artifacts is present (1, 2, 3 and 1 more)"},
	}
	for _, tt := range tests {
		if got := (ArtifactResult{Checks: tt.checks}).deliveryMessage(tt.d); got != tt.want {
			t.Errorf("%s: %q, want %q", tt.d, got, tt.want)
		}
	}
}
