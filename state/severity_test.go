package state

import (
	"fmt"
	"reflect"
	"testing"
)

// seedRule is one `if` of the Unified Entity State Model design's derive_severity, transcribed in the
// seed's own order, as data: an independent encoding to check the switch
// in severity.go against.
type seedRule struct {
	dim    string // "outcome", "health" or "delivery"
	values []string
	sev    Severity
	tone   Tone
}

var seedCascade = []seedRule{
	{"outcome", []string{"failed", "aborted"}, SeverityCritical, ToneDanger},
	{"health", []string{"process_dead", "orphaned"}, SeverityCritical, ToneDanger},
	{"delivery", []string{"missing"}, SeverityCritical, ToneDanger},
	{"health", []string{"stalled"}, SeverityCritical, ToneDanger},
	{"health", []string{"misfired"}, SeverityCritical, ToneDanger},
	// Not in the seed: issue 15's lost host (docs/fleet.md), critical.
	{"health", []string{"lost"}, SeverityCritical, ToneDanger},
	{"outcome", []string{"timed_out"}, SeverityWarning, ToneWarning},
	{"health", []string{"idle", "degraded", "disconnected"}, SeverityWarning, ToneWarning},
	{"delivery", []string{"partial", "invalid"}, SeverityWarning, ToneWarning},
	{"health", []string{"running"}, SeverityInfo, ToneInfo},
	{"health", []string{"due"}, SeverityInfo, ToneInfo},
	{"outcome", []string{"skipped"}, SeverityInfo, ToneNeutral},
	{"outcome", []string{"succeeded", "completed", "merged"}, SeverityNeutral, ToneSuccess},
	{"outcome", []string{"cancelled"}, SeverityNeutral, ToneNeutral},
}

func seedDerive(outcome, health, delivery string) (Severity, Tone) {
	for _, r := range seedCascade {
		v := map[string]string{"outcome": outcome, "health": health, "delivery": delivery}[r.dim]
		for _, want := range r.values {
			if v == want {
				return r.sev, r.tone
			}
		}
	}
	return SeverityNeutral, ToneNeutral
}

func TestDeriveSeverityCrossProduct(t *testing.T) {
	// Every outcome (shared vocabulary, per-type terminals, and none), every
	// health, every delivery, plus empty values.
	outcomes := append([]string{"", "interrupted", "partial", "archived", "closed", "stopped"}, Outcomes...)
	healths := append([]Health{""}, Healths...)
	deliveries := append([]Delivery{""}, Deliveries...)
	n := 0
	for _, o := range outcomes {
		for _, h := range healths {
			for _, d := range deliveries {
				gotS, gotT := DeriveSeverity(o, h, d)
				wantS, wantT := seedDerive(o, string(h), string(d))
				if gotS != wantS || gotT != wantT {
					t.Errorf("DeriveSeverity(%q, %q, %q) = %s/%s, seed cascade says %s/%s", o, h, d, gotS, gotT, wantS, wantT)
				}
				n++
			}
		}
	}
	if want := len(outcomes) * len(healths) * len(deliveries); n != want || n < 800 {
		t.Fatalf("checked %d combinations, want %d", n, want)
	}
}

func TestSeverityTonePairs(t *testing.T) {
	// The Unified Entity State Model design's table of which tones a severity may carry.
	allowed := map[Severity][]Tone{
		SeverityCritical: {ToneDanger},
		SeverityWarning:  {ToneWarning},
		SeverityInfo:     {ToneInfo, ToneNeutral},
		SeverityNeutral:  {ToneSuccess, ToneNeutral},
	}
	if !reflect.DeepEqual(SeverityTones, allowed) {
		t.Errorf("SeverityTones = %v, the state model says %v", SeverityTones, allowed)
	}
	for _, o := range Outcomes {
		for _, h := range Healths {
			for _, d := range Deliveries {
				s, tone := DeriveSeverity(o, h, d)
				ok := false
				for _, a := range allowed[s] {
					ok = ok || a == tone
				}
				if !ok {
					t.Errorf("(%s,%s,%s): severity %s with tone %s", o, h, d, s, tone)
				}
			}
		}
	}
}

func TestNormalizePerTypeTerminals(t *testing.T) {
	tests := []struct {
		name             string
		lifecycle        string
		outcome          string
		health           Health
		delivery         Delivery
		wantSev          Severity
		wantTone         Tone
		wantDelivery     Delivery
		wantDisplayChain string
	}{
		{"workflow partial reads as a warning, never success", "partial", "partial", HealthOK, DeliveryPassed, SeverityWarning, ToneWarning, DeliveryPartial, "Partial · Artifacts partial"},
		{"workflow partial with nothing delivered stays missing", "partial", "partial", HealthOK, DeliveryMissing, SeverityCritical, ToneDanger, DeliveryMissing, "Partial · Artifacts missing"},
		{"turn partial_failed is a failure with partial output", "partial_failed", "partial_failed", HealthOK, DeliveryNotExpected, SeverityCritical, ToneDanger, DeliveryPartial, "Partial failed · Infra OK · Artifacts partial"},
		{"interrupted is intentional", "interrupted", "interrupted", HealthOK, DeliveryNotExpected, SeverityNeutral, ToneNeutral, DeliveryNotExpected, "Interrupted"},
		{"legacy is neutral and apart", LifecycleLegacy, "", HealthUnknown, DeliveryUnknown, SeverityNeutral, ToneNeutral, DeliveryUnknown, "Legacy"},
		{"running and alive is info", "running", "", HealthRunning, DeliveryNotExpected, SeverityInfo, ToneInfo, DeliveryNotExpected, "Running · Alive"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := Normalize(tt.lifecycle, tt.outcome, tt.health, tt.delivery, nil, unixAt(100))
			if s.Severity != tt.wantSev || s.Tone != tt.wantTone || s.Delivery != tt.wantDelivery {
				t.Errorf("got %s/%s delivery %s, want %s/%s delivery %s", s.Severity, s.Tone, s.Delivery, tt.wantSev, tt.wantTone, tt.wantDelivery)
			}
			if got := DisplayChain(s, "", true); got != tt.wantDisplayChain {
				t.Errorf("display %q, want %q", got, tt.wantDisplayChain)
			}
			if s.PolicyVersion != "v1" || s.Source != "backend" || !s.EvaluatedAt.Equal(unixAt(100)) || s.Reasons == nil {
				t.Errorf("stamps: %+v", s)
			}
		})
	}
}

func TestDisplayChainSeedExamples(t *testing.T) {
	tests := []struct {
		state   NormalizedState
		subject string
		want    string
	}{
		// "Failed + Healthy" becomes "Failed · Infra OK": a failure whose
		// infrastructure was fine is an error, not a crash.
		{Normalize("failed", "failed", HealthOK, DeliveryPassed, nil, unixAt(0)), "trace", "Failed · Infra OK · Trace present"},
		{Normalize("running", "", HealthRunning, DeliveryInvalid, nil, unixAt(0)), "passwd.txt", "Running · Alive · passwd.txt invalid"},
		{Normalize("running", "", HealthRunning, DeliveryPassed, nil, unixAt(0)), "*.json", "Running · Alive · *.json present"},
		{Normalize("running", "", HealthStalled, DeliveryMissing, nil, unixAt(0)), "", "Running · Stalled · Artifacts missing"},
		// The Unified Entity State Model design shows "Completed · Artifact
		// contract passed"; docs/reference/state-model.md (which wins) omits passed delivery on a terminal success.
		{Normalize("completed", "completed", HealthOK, DeliveryPassed, nil, unixAt(0)), "", "Completed"},
		{Normalize("timed_out", "timed_out", HealthOK, DeliveryMissing, nil, unixAt(0)), "review.md", "Timed out · No review.md produced"},
	}
	for _, tt := range tests {
		if got := DisplayChain(tt.state, tt.subject, true); got != tt.want {
			t.Errorf("DisplayChain(%s/%s/%s) = %q, want %q", tt.state.Outcome, tt.state.Health, tt.state.Delivery, got, tt.want)
		}
	}
}

func TestDisplayChainOmissions(t *testing.T) {
	tests := []struct {
		lifecycle, outcome string
		health             Health
		delivery           Delivery
		// unjudged: the entity has no process or heartbeat of its own.
		unjudged bool
		want     string
	}{
		// Health ok is omitted on an ended entity unless it failed.
		{"cancelled", "cancelled", HealthOK, DeliveryNotExpected, false, "Cancelled"},
		{"aborted", "aborted", HealthOK, DeliveryNotExpected, false, "Aborted · Infra OK"},
		// Ended by the watchdog for a dead process: the death stays.
		{"aborted", "aborted", HealthProcessDead, DeliveryNotExpected, false, "Aborted · Process dead"},
		// A terminal entity whose process is still alive must show it.
		{"completed", "completed", HealthOrphaned, DeliveryNotExpected, false, "Completed · Orphaned"},
		{"completed", "completed", HealthDegraded, DeliveryPassed, false, "Completed · Degraded"},
		// Passed is shown when the outcome is not a success.
		{"failed", "failed", HealthProcessDead, DeliveryPassed, false, "Failed · Process dead · Artifact contract passed"},
		// While running, unknown health is said; unknown delivery is not.
		{"running", "", HealthUnknown, DeliveryUnknown, false, "Running · Health unknown"},
		{"queued", "", HealthOK, DeliveryNotExpected, false, "Queued · Infra OK"},
		// With nothing of its own to judge (a show, a team, a queued play
		// without a pid), ok is no finding: no "Infra OK", ended or not.
		{"queued", "", HealthOK, DeliveryNotExpected, true, "Queued"},
		{"failed", "failed", HealthOK, DeliveryNotExpected, true, "Failed"},
		{"active", "", HealthOK, DeliveryNotExpected, true, "Active"},
		// Other healths of such an entity are findings and stay.
		{"enabled", "", HealthMisfired, DeliveryNotExpected, true, "Enabled · Misfired"},
		{"active", "", HealthOrphaned, DeliveryNotExpected, true, "Active · Orphaned"},
	}
	for _, tt := range tests {
		s := Normalize(tt.lifecycle, tt.outcome, tt.health, tt.delivery, nil, unixAt(0))
		if got := DisplayChain(s, "", !tt.unjudged); got != tt.want {
			t.Errorf("%s/%s/%s: %q, want %q", tt.outcome, tt.health, tt.delivery, got, tt.want)
		}
	}
}

// A finding with a severity of its own is in the chain as in the pills:
// a completed entity its leftovers made critical never reads "Completed"
// alone.
func TestDisplayChainFindings(t *testing.T) {
	left := []StateReason{{Code: RunCompletedExitZero}, {Code: RunHealthLeftoverProcesses}}
	tests := []struct {
		lifecycle, outcome string
		health             Health
		want               string
		sev                Severity
	}{
		{"completed", "completed", HealthOK, "Completed · Leftover processes", SeverityCritical},
		{"running", "", HealthProcessDead, "Running · Process dead · Leftover processes", SeverityCritical},
		{"running", "", HealthRunning, "Running · Alive · Leftover processes", SeverityWarning},
	}
	for _, tt := range tests {
		s := Normalize(tt.lifecycle, tt.outcome, tt.health, DeliveryNotExpected, left, unixAt(0))
		if got := DisplayChain(s, "", true); got != tt.want || s.Severity != tt.sev {
			t.Errorf("%s/%s: %q %s, want %q %s", tt.lifecycle, tt.health, got, s.Severity, tt.want, tt.sev)
		}
	}
}

// Each reason is counted under its own severity: a success code never
// under critical, whatever its holder's findings made the holder.
func TestReasonSeverity(t *testing.T) {
	tests := []struct {
		code   ReasonCode
		holder Severity
		open   bool
		want   Severity
	}{
		{RunCompletedExitZero, SeverityCritical, false, SeverityNeutral},
		{AgentStoppedProcessExited, SeverityCritical, false, SeverityNeutral},
		{RunCancelledSigterm, SeverityWarning, false, SeverityNeutral},
		{RunFailedExitNonzero, SeverityCritical, false, SeverityCritical},
		{RunTimedOutDeadline, SeverityCritical, false, SeverityWarning},
		{WorkflowPartialOutcome, SeverityWarning, false, SeverityWarning},
		{TurnPartialFailedProvider, SeverityCritical, false, SeverityCritical},
		{RunHealthLeftoverProcesses, SeverityCritical, true, SeverityWarning},
		{RunHealthLeftoverProcesses, SeverityNeutral, false, SeverityCritical},
		{RunHealthStalled, SeverityCritical, true, SeverityCritical},
		{RunDeliveryMissing, SeverityCritical, false, SeverityCritical},
		{SystemReaperPhantomProcessDead, SeverityCritical, false, SeverityCritical},
		{PlayBlockedDependencyFailed, SeverityWarning, true, SeverityWarning},
	}
	for _, tt := range tests {
		if got := ReasonSeverity(tt.code, tt.holder, tt.open); got != tt.want {
			t.Errorf("ReasonSeverity(%s, %s, open %v) = %s, want %s", tt.code, tt.holder, tt.open, got, tt.want)
		}
	}
}

func ExampleDisplayChain() {
	s := Normalize("running", "", HealthStalled, DeliveryMissing, nil, unixAt(0))
	fmt.Println(s.Severity, s.Tone, DisplayChain(s, "", true))
	// Output: critical danger Running · Stalled · Artifacts missing
}
