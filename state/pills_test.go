package state

import (
	"strings"
	"testing"
)

// pillsText renders pills as "Label/tone" joined by " + ".
func pillsText(ps []StatePill) string {
	var b []string
	for _, p := range ps {
		b = append(b, p.Label+"/"+string(p.Tone))
	}
	return strings.Join(b, " + ")
}

// TestStatePills: the Session Status Vocabulary design's compound state.
// The lifecycle's pill keeps its own colour (running blue, completed
// green, failed red, timed out amber, cancelled grey); a health or
// delivery problem is a pill of its own beside it; nothing else is.
func TestStatePills(t *testing.T) {
	leftover := Observed(RunHealthLeftoverProcesses, "2 processes left")
	tests := []struct {
		name    string
		state   NormalizedState
		subject string
		want    string
	}{
		{"stalled running: never a Running pill alone", Normalize("running", "", HealthStalled, DeliveryNotExpected, nil, unixAt(0)), "", "Running/info + Stalled/danger"},
		{"orphaned completed: green Completed beside red Orphaned", Normalize("completed", "completed", HealthOrphaned, DeliveryNotExpected, nil, unixAt(0)), "", "Completed/success + Orphaned/danger"},
		{"alive running: one pill", Normalize("running", "", HealthRunning, DeliveryNotExpected, nil, unixAt(0)), "", "Running/info"},
		{"idle running: amber health", Normalize("running", "", HealthIdle, DeliveryUnknown, nil, unixAt(0)), "", "Running/info + Idle/warning"},
		{"healthy completed: the status pill only", Normalize("completed", "completed", HealthOK, DeliveryPassed, nil, unixAt(0)), "", "Completed/success"},
		{"failed with infra ok: one red pill", Normalize("failed", "failed", HealthOK, DeliveryPassed, nil, unixAt(0)), "trace", "Failed/danger"},
		{"timed out without its output", Normalize("timed_out", "timed_out", HealthOK, DeliveryMissing, nil, unixAt(0)), "review.md", "Timed out/warning + No review.md produced/danger"},
		{"cancelled", Normalize("cancelled", "cancelled", HealthUnknown, DeliveryNotExpected, nil, unixAt(0)), "", "Cancelled/neutral"},
		{"stalled with missing artifacts", Normalize("running", "", HealthStalled, DeliveryMissing, nil, unixAt(0)), "", "Running/info + Stalled/danger + Artifacts missing/danger"},
		{"partial workflow: its delivery", Normalize("partial", "partial", HealthOK, DeliveryNotExpected, nil, unixAt(0)), "", "Partial/warning + Artifacts partial/warning"},
		{"leftover processes after a clean end", Normalize("completed", "completed", HealthOK, DeliveryNotExpected, []StateReason{leftover}, unixAt(0)), "", "Completed/success + Leftover processes/danger"},
		{"leftover processes while open", Normalize("running", "", HealthRunning, DeliveryNotExpected, []StateReason{leftover, leftover}, unixAt(0)), "", "Running/info + Leftover processes/warning"},
		{"legacy", Normalize(LifecycleLegacy, "", "", "", nil, unixAt(0)), "", "Legacy/neutral"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := pillsText(StatePills(tt.state, tt.subject)); got != tt.want {
				t.Errorf("StatePills(%s/%s/%s) = %q, want %q", tt.state.Lifecycle, tt.state.Health, tt.state.Delivery, got, tt.want)
			}
		})
	}
}

// TestStatePillsCarryTheSeverity: over the whole vocabulary, the
// entity's tone is always one of its pills' (the row's colour is never
// unexplained by its pills), and the lifecycle's pill comes first.
func TestStatePillsCarryTheSeverity(t *testing.T) {
	for _, o := range append([]string{""}, Outcomes...) {
		for _, h := range append([]Health{""}, Healths...) {
			for _, d := range append([]Delivery{""}, Deliveries...) {
				lc := o
				if lc == "" {
					lc = "running"
				}
				s := Normalize(lc, o, h, d, nil, unixAt(0))
				ps := StatePills(s, "")
				if ps[0].Dimension != PillLifecycle {
					t.Fatalf("%s/%s/%s: first pill %+v", o, h, d, ps[0])
				}
				if !problem(s.Tone) {
					continue
				}
				found := false
				for _, p := range ps {
					found = found || p.Tone == s.Tone
				}
				if !found {
					t.Errorf("%s/%s/%s is %s but no pill has that tone: %s", o, h, d, s.Tone, pillsText(ps))
				}
			}
		}
	}
}
