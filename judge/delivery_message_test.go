package judge

import (
	"testing"

	"watchdog/probe"
	"watchdog/state"
)

// The queue line of a delivery finding names the artifacts at fault, as
// the chain names a contract's one ("No report.md produced").
func TestDeliveryMessageNamesTheArtifacts(t *testing.T) {
	check := func(path string, required bool, st probe.ArtifactStatus) probe.ArtifactCheck {
		return probe.ArtifactCheck{Spec: state.ArtifactSpec{Path: path, Required: required}, Status: st}
	}
	tests := []struct {
		checks []probe.ArtifactCheck
		d      state.Delivery
		want   string
	}{
		{[]probe.ArtifactCheck{check("report.md", true, probe.ArtifactMissing)}, state.DeliveryMissing, "the required artifact report.md is not present"},
		{[]probe.ArtifactCheck{check("a.md", true, probe.ArtifactMissing), check("b.md", true, probe.ArtifactMissing)}, state.DeliveryMissing, "none of the 2 required artifacts is present (a.md, b.md)"},
		{[]probe.ArtifactCheck{check("a.md", true, probe.ArtifactValid), check("b.md", true, probe.ArtifactMissing)}, state.DeliveryPartial, "1 of 2 required artifacts valid; not present: b.md"},
		{[]probe.ArtifactCheck{check("out.json", true, probe.ArtifactInvalid)}, state.DeliveryInvalid, "1 artifact(s) present but invalid (out.json)"},
		{[]probe.ArtifactCheck{check("1", true, probe.ArtifactMissing), check("2", true, probe.ArtifactMissing), check("3", true, probe.ArtifactMissing), check("4", true, probe.ArtifactMissing)},
			state.DeliveryMissing, "none of the 4 required artifacts is present (1, 2, 3 and 1 more)"},
	}
	for _, tt := range tests {
		if got := deliveryMessage(probe.ArtifactResult{Checks: tt.checks}, tt.d); got != tt.want {
			t.Errorf("%s: %q, want %q", tt.d, got, tt.want)
		}
	}
}
